#include <fx/context.hpp>

#include "runtime.hpp"
#include "tryblock_detail.hpp"

namespace fx {

detail::RuntimeServices& detail::ContextAccess::rt(Context& ctx) { return ctx.rt_; }

const Comm& Context::comm() const { return rt_.app_comm(); }
int Context::rank() const { return rt_.logical_rank(); }
int Context::size() const { return rt_.logical_size(); }
Role Context::role() const { return rt_.role(); }
std::int64_t Context::iteration() const { return rt_.iteration(); }
bool Context::replaying() const { return rt_.replaying(); }
bool Context::failing() const { return rt_.failing_in_step(); }
int Context::recoveries() const { return rt_.recoveries(); }
DataStore& Context::store() { return rt_.store(); }
ReportView Context::report() { return ReportView(rt_.report()); }
const Config& Context::fx_config() const { return rt_.config(); }
const ConfigSection& Context::config() const { return rt_.config().app; }
const std::vector<std::string>& Context::args() const { return rt_.args(); }
void Context::fault_point(Phase phase) { rt_.fault_point(phase); }
Comm Context::split(int color, int key) { return rt_.derive(color, key, false); }
Comm Context::dup() { return rt_.derive(0, 0, true); }
void Context::on_failure(std::function<void(const FailureEvent&)> callback) {
  rt_.add_callback(std::move(callback));
}
std::vector<int> Context::failed_ranks() const { return rt_.failed_logical_ranks(); }

}  // namespace fx
