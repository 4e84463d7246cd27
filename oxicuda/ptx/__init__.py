"""oxicuda.ptx: IR, builder, emitter, parser, specs, kernel cache, registry, validation."""
