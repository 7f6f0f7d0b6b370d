// Hands one mail to the node's sendmail (Debian's exim4, postfix or msmtp all install
// /usr/sbin/sendmail): `sendmail -oi -- TO` with the message on its standard input.
#pragma once

#include <chrono>
#include <string>

#include "core/status.h"

namespace corral::notify {

// Runs `program -oi -- to` with `message` as its input; an exit other than 0, a program that
// cannot run, or one still running after `timeout` (then killed) is an error saying which.
Status RunSendmail(const std::string& program, const std::string& to, const std::string& message,
                   std::chrono::milliseconds timeout);

}  // namespace corral::notify
