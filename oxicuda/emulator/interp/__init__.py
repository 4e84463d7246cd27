"""The PTX interpreter behind the emulator's ``cuLaunchKernel``.

A module is parsed and decoded once at load (``program.load_program``): every instruction is
turned, by the handler registered for its opcode, into an ``Op``. At launch the ops are *bound*
to a ``Cta`` (the register file and memories of one block shape), which gives plain closures
over preallocated numpy arrays. ``run.run_grid`` then executes one CTA at a time, every register
a numpy array with one lane per thread, stepping the group of threads with the lowest program
counter (so structured code reconverges); ``bar.sync`` waits for all live threads; named and
partial barriers (``bar.sync id, count``, ``bar.arrive``) are in ``named_barriers.py``; warp
collectives require every thread their member mask names to be at the same instruction.
``bar.warp.sync`` and ``bar.red`` are in ``barrier_ops.py``. ``call``/``.func`` are inlined at load
(``calls.py``). Floating point follows the hardware where PTX programs can observe it: f32, f16
and bf16 results that are NaN are the canonical NaN (0x7FFFFFFF, 0x7FFF) while moves, abs, neg
and copysign keep payloads (``floatmath.canon``); ``.approx`` instructions are computed exactly
and rounded once, with the ISA's special values, ``.ftz`` and the sin/cos argument reduction
modelled (``approx.py``, whose ``MAX_ERROR`` gives the tolerances for tests). ``OXICUDA_EMULATOR_STRICT=1`` (or
``strict.strict_mode()``) faults on reads of registers and shared memory that the CTA never
wrote (``strict.py``).

Adding instructions (``tensorcore.py``, ``async_copy.py`` or any other module)::

    from oxicuda.emulator.interp.registry import Op, register_handler

    def decode_ldmatrix(instr, kc):          # at module load, once per instruction
        # instr: oxicuda.ptx.ir.Instr; kc: program.KernelContext (kernel name, register
        # types, symbol addresses, labels). Raise kc.unsupported(instr, why) for variants you
        # do not handle: the load fails naming the instruction.
        def bind(cta):                       # at launch, once per block shape
            # cta: state.Cta: cta.reader(operand, ptx_type) -> zero-arg callable returning a
            # numpy array (one lane per thread) or scalar; cta.writer(operand, ptx_type) ->
            # put(value, mask); cta.mem: memory.Memory (load/store/atomic by state space,
            # addresses as uint64 arrays of the active lanes); cta.nthreads, cta.lane, cta.warp,
            # cta.warp_members(mask) and cta.fault(...) (see state.py).
            def step(mask):                  # per execution
                # mask: None (every thread of the CTA) or a bool array of the active threads
                # (guard predicate already applied). Lanes outside mask must not change.
                ...
            return step
        return Op(bind)

    register_handler("ldmatrix", decode_ldmatrix)

``program.load_program`` imports ``oxicuda.emulator.interp.tensorcore`` and
``oxicuda.emulator.interp.async_copy`` when they exist, so their ``register_handler`` calls run
before any module is decoded. Faults raise ``faults.Fault`` (code 700/716/719, a message, the
lane and address); the run loop turns them into ``LaunchError`` naming the kernel, the PTX line,
the block and thread.
"""

from .registry import Op, register_handler  # noqa: F401
