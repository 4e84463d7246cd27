"""The emulator wing: a CUDA driver that runs on the CPU (``api.EmulatorAPI``: contexts, memory,
streams, events, modules, launches, graphs, tensor maps; devices from ``devices``) and the PTX
interpreter it launches kernels with (``interp``). It sits above ``driver/`` and ``ptx/``, whose
modules it imports; nothing below reaches it except ``driver.backend``, the seam that picks the
live driver (``OXICUDA_BACKEND``: the real libcuda or this one).
"""
