#include <fx/config.hpp>
