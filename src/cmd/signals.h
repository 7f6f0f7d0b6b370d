// Process-wide signal handling for the daemons: SIGINT/SIGTERM are blocked in every thread
// (call BlockStopSignals before starting any) and waited for synchronously on the main thread.
#pragma once

namespace corral::cmd {

void BlockStopSignals();
int WaitForStopSignal();  // returns the signal number
// A stop signal that arrives within `timeout_ms`, or 0.
int PollStopSignal(int timeout_ms);

}  // namespace corral::cmd
