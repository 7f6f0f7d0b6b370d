"""torchrun, for Debian 12's PyTorch 1.13 on Python 3.11.

There, torchrun fails before starting anything ('NoneType' object has no attribute 'get'):
Std.from_str looks a value up by iterating the IntFlag Std, and Python 3.11 no longer yields
the zero member NONE that way. This patches that one lookup and runs torchrun unchanged; on any
other PyTorch it changes nothing that works.
"""
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(vm):
    if "," in vm or ":" in vm:
        return {int(i): api.Std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    return api.Std(int(vm))


api.Std.from_str = staticmethod(_from_str)

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
