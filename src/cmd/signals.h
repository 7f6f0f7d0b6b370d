// Process-wide signal handling for the daemons: SIGINT/SIGTERM are blocked in every thread
// (call BlockStopSignals before starting any) and waited for synchronously on the main thread.
#pragma once

namespace corral::cmd {

void BlockStopSignals();
int WaitForStopSignal();  // returns the signal number

}  // namespace corral::cmd
