"""The kernel families of oxicuda.rand (one module each: spec, generator, registry entry)."""
