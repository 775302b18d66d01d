#include <fx/inject.hpp>
