// The calls deprecated for one release (CHANGELOG, migration notes): an
// application that still makes them builds, with a warning naming what to
// do. tests/install/run.sh builds this with -Werror=deprecated-declarations
// and expects exactly these two errors.
#include <fx/fx.hpp>

void still_clears(fx::Context& ctx) { ctx.store().clear(); }
void still_flushes(fx::Context& ctx) { ctx.store().flush(); }
