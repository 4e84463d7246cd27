"""PTX generators of oxicuda.solver: one module per kernel family (frozen spec, pure generator,
registry entry). ``oxicuda.solver.KERNEL_MODULES`` lists them for the registry."""
