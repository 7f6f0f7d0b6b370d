// corral-container: a container replica's task, started by the agent's monitor as
// `corral-container container-task RUN` with CORRAL_CONTAINER_TASK=T (container.h). Static and
// small, so that what each task in an image pays before crun is an exec of a few pages, not the
// loading of the corral executable's ~30 shared libraries.
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "agent/containers/container.h"

int main(int argc, char** argv) {
  const char* task = std::getenv("CORRAL_CONTAINER_TASK");
  if (argc != 3 || std::strcmp(argv[1], "container-task") != 0 || task == nullptr) {
    std::cerr << "corral-container: started by the agent only\n";
    return 2;
  }
  return corral::agent::ContainerTaskMain(argv[2], std::atoi(task));
}
