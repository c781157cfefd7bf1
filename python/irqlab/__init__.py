"""irqlab: predictable interrupt and I/O handling for real-time systems.

Model a machine (cores, VCPUs, tasks, devices, interrupt paths), analyze it,
simulate it deterministically, run it on Linux threads, and measure it. The
Rust core (``irqlab._native``) does the work; this package is the thin, typed
Python layer and the ``irqlab`` command line.
"""

from irqlab._native import __version__

__all__ = ["__version__"]
