"""A script written against ``cupy.cuda.curand`` (the vendor surface), used by the compat tests
with only its imports changed (``SWAPPED``)."""

SCRIPT = '''
import numpy as np
import cupy as xp
from cupy.cuda import curand


def ptr(a):
    return a.__cuda_array_interface__["data"][0]


def run(seed, offset, n):
    gen = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    curand.setPseudoRandomGeneratorSeed(gen, seed)
    curand.setGeneratorOffset(gen, offset)
    curand.setGeneratorOrdering(gen, curand.CURAND_ORDERING_PSEUDO_DEFAULT)
    raw = xp.empty(n, dtype=np.uint32)
    uni = xp.empty(n, dtype=np.float32)
    dbl = xp.empty(n, dtype=np.float64)
    nrm = xp.empty(n - n % 2, dtype=np.float32)
    curand.generate(gen, ptr(raw), n)
    curand.generateUniform(gen, ptr(uni), n)
    curand.generateUniformDouble(gen, ptr(dbl), n)
    curand.generateNormal(gen, ptr(nrm), nrm.size, 0.0, 1.0)
    curand.destroyGenerator(gen)
    return {"raw": xp.asnumpy(raw), "uniform": xp.asnumpy(uni), "uniform_double": xp.asnumpy(dbl),
            "normal": xp.asnumpy(nrm)}
'''

SWAPPED = SCRIPT.replace("import cupy as xp", "import oxicuda as xp").replace(
    "from cupy.cuda import curand", "from oxicuda.cuda import curand")


def load(text: str) -> dict:
    scope: dict = {}
    exec(compile(text, "<curand script>", "exec"), scope)  # noqa: S102 - runs the script
    return scope
