#include <fx/report.hpp>
