// Which address an agent tells the head (and its jobs' peers) to reach it on (DESIGN §7).
#pragma once

#include <string>

#include "core/status.h"

namespace corral::agentnet {

// The local address that traffic to host:port leaves from (a UDP connect: nothing is sent).
// This is the address peers on the head's network can reach: on a machine with several
// interfaces, the one routed toward the head; 127.0.0.1 only when the head is on loopback.
Result<std::string> LocalAddressToward(const std::string& host, int port);

// The name of the network interface that holds `address` (getifaddrs); "" when none does
// (a host name, or an address of another machine).
std::string InterfaceOf(const std::string& address);

// The address to advertise: `flag` when given (validated as an IP address or a host name
// without a port), else LocalAddressToward the head.
Result<std::string> AdvertiseAddress(const std::string& flag, const std::string& head_host,
                                     int head_port);

}  // namespace corral::agentnet
