"""python -m runnel.query [DEVICE]: runnel's version, every available device
with its version and properties (read-only or read-write), and the devices
that failed to load with why; the Python counterpart of tools/query."""
from __future__ import annotations

import argparse
import re
import sys
from typing import List, Optional

from . import Core, RunnelError, __version__


def _keys(core: Core, device: str) -> List[str]:
    try:
        return [k for k in re.split(r"[\s,]+", core.get_property(device, "SUPPORTED_PROPERTIES"))
                if k]
    except RunnelError:
        return []


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runnel.query", description=__doc__)
    ap.add_argument("device", nargs="?", help="only this device")
    args = ap.parse_args(argv)
    core = Core()
    print(f"runnel {__version__}\n\nAvailable devices")
    devices = core.available_devices
    if args.device is not None:
        if args.device not in devices:
            print(f"python -m runnel.query: no device {args.device!r} (available: "
                  f"{', '.join(devices)})", file=sys.stderr)
            return 1
        devices = [args.device]
    for device in devices:
        print(f"{device}\n    version: {core.get_versions(device)[device]}")
        for key in _keys(core, device):
            if key == "SUPPORTED_PROPERTIES":
                continue
            try:
                value = core.get_property(device, key)
            except RunnelError as e:
                print(f"    {key}: not readable: {e}")
                continue
            try:
                core.set_property(device, {key: value})
                mode = "RW"
            except RunnelError:
                mode = "RO"
            print(f"    {key} ({mode}): {value}")
    print("\nDevices that failed to load")
    failed = core.failed_devices
    for name, reason in failed.items():
        print(f"    {name}: {reason}")
    if not failed:
        print("    (none)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
