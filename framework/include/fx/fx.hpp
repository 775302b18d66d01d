#pragma once
/// \file
/// Umbrella header of the fx framework.
#include <fx/app.hpp>
#include <fx/comm.hpp>
#include <fx/config.hpp>
#include <fx/context.hpp>
#include <fx/data_store/store.hpp>
#include <fx/error.hpp>
#include <fx/log.hpp>
#include <fx/reinit.hpp>
#include <fx/report.hpp>
#include <fx/tryblock.hpp>
