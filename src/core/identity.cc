#include "core/identity.h"

namespace corral {

const char* RoleName(Role r) {
  switch (r) {
    case Role::kUser:
      return "user";
    case Role::kQueueAdmin:
      return "queue-admin";
    case Role::kAdmin:
      return "admin";
  }
  return "user";
}

bool ParseRole(const std::string& text, Role* out) {
  for (Role r : {Role::kUser, Role::kQueueAdmin, Role::kAdmin}) {
    if (text == RoleName(r)) {
      *out = r;
      return true;
    }
  }
  return false;
}

}  // namespace corral
