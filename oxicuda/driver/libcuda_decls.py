"""The C declarations oxicuda's driver binding (``libcuda.py``) hands cffi: the ``cuda.h`` types
and functions it calls, by their exported symbol names (``cuMemAlloc_v2``...), the ``CUjit_option``
values it passes, and the lists of functions and type strings the binding resolves up front.

Handle types (CUcontext, CUstream, CUfunction, ...) and host pointers are declared as
``uintptr_t`` (see ``libcuda.py``).
"""

from __future__ import annotations

import re

CDEF = """
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uintptr_t CUcontext;
typedef uintptr_t CUmodule;
typedef uintptr_t CUfunction;
typedef uintptr_t CUstream;
typedef uintptr_t CUevent;
typedef uintptr_t hostptr_t;
typedef struct { char bytes[16]; } CUuuid;

typedef struct {
    size_t srcXInBytes; size_t srcY; int srcMemoryType; hostptr_t srcHost;
    CUdeviceptr srcDevice; uintptr_t srcArray; size_t srcPitch;
    size_t dstXInBytes; size_t dstY; int dstMemoryType; hostptr_t dstHost;
    CUdeviceptr dstDevice; uintptr_t dstArray; size_t dstPitch;
    size_t WidthInBytes; size_t Height;
} CUDA_MEMCPY2D;

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);

CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxSynchronize(void);

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemFreeHost(hostptr_t p);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr);

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, hostptr_t src, size_t n);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, hostptr_t src, size_t n, CUstream s);
CUresult cuMemcpyDtoH_v2(hostptr_t dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoHAsync_v2(hostptr_t dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s);
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n);
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s);
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n);
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s);

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags);
CUresult cuEventCreate(CUevent *phEvent, unsigned int flags);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            int *options, void **optionValues);
CUresult cuModuleUnload(CUmodule hmod);
/* JIT linker, checked against cuda.h (CUDA 12/13) and its public mirrors: cuda.h maps
   cuLinkCreate -> cuLinkCreate_v2 and cuLinkAddData -> cuLinkAddData_v2 (since CUDA 6.5);
   CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                            void **optionValues, CUlinkState *stateOut);
   CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                             const char *name, unsigned int numOptions, CUjit_option *options,
                             void **optionValues);
   CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut);
   CUresult cuLinkDestroy(CUlinkState state);
   CUjit_option and CUjitInputType are C enums (int); CUlinkState is a pointer (uintptr_t). */
typedef uintptr_t CUlinkState;
CUresult cuLinkCreate_v2(unsigned int numOptions, int *options, void **optionValues,
                         CUlinkState *stateOut);
CUresult cuLinkAddData_v2(CUlinkState state, int type, void *data, size_t size,
                          const char *name, unsigned int numOptions, int *options,
                          void **optionValues);
CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut);
CUresult cuLinkDestroy(CUlinkState state);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuFuncGetAttribute(int *pi, int attrib, CUfunction hfunc);
CUresult cuFuncSetAttribute(CUfunction hfunc, int attrib, int value);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                     int blockSize, size_t dynamicSMemSize);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra);
/* CUlaunchConfig as cuda.h declares it (attrs is a CUlaunchAttribute*; oxicuda passes none).
   cuLaunchKernelEx takes the function as void* so a launch passes a prebuilt cdata, which
   cffi forwards without converting a Python int. */
typedef struct {
    unsigned int gridDimX; unsigned int gridDimY; unsigned int gridDimZ;
    unsigned int blockDimX; unsigned int blockDimY; unsigned int blockDimZ;
    unsigned int sharedMemBytes; CUstream hStream; void *attrs; unsigned int numAttrs;
} CUlaunchConfig;
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, void *f, void **kernelParams,
                          void **extra);
/* Stream capture and graphs, as cuda.h (CUDA 12.x/13.0) declares them. cuda.h maps
   cuStreamBeginCapture -> cuStreamBeginCapture_v2 (mode: CUstreamCaptureMode, an enum),
   cuGraphExecUpdate -> cuGraphExecUpdate_v2 (CUDA 12.0 on; the result info struct is
   { CUgraphExecUpdateResult result; CUgraphNode errorNode; CUgraphNode errorFromNode; }),
   cuGraphInstantiate -> cuGraphInstantiateWithFlags (12.0 on; flags unsigned long long), and
   cuStreamGetCaptureInfo -> _v2 (12.x) or _v3 (13.0, one more out-parameter: edge data); the
   driver exports every version, and the binding calls _v2. CUstreamCaptureStatus and
   CUgraphExecUpdateResult are C enums (int); CUgraph, CUgraphExec, CUgraphNode are pointers. */
typedef uintptr_t CUgraph;
typedef uintptr_t CUgraphExec;
typedef uintptr_t CUgraphNode;
typedef struct { int result; CUgraphNode errorNode; CUgraphNode errorFromNode; }
    CUgraphExecUpdateResultInfo;
CUresult cuStreamBeginCapture_v2(CUstream hStream, int mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
CUresult cuStreamIsCapturing(CUstream hStream, int *captureStatus);
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, int *captureStatus_out, uint64_t *id_out,
                                   CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out);
CUresult cuThreadExchangeStreamCaptureMode(int *mode);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags);
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                              CUgraphExecUpdateResultInfo *resultInfo);
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult cuTensorMapEncodeTiled(void *tensorMap, int tensorDataType, unsigned int tensorRank,
                                hostptr_t globalAddress, const uint64_t *globalDim,
                                const uint64_t *globalStrides, const uint32_t *boxDim,
                                const uint32_t *elementStrides, int interleave, int swizzle,
                                int l2Promotion, int oobFill);
"""

# CUjit_option values (cuda.h)
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
# CUjitInputType values (cuda.h: CUBIN=0, PTX=1, FATBINARY=2, OBJECT=3, LIBRARY=4)
CU_JIT_INPUT_PTX = 1


# Why everything is resolved and parsed up front: cffi takes one non-reentrant lock (``ffi._lock``)
# while it parses a C type string it has not seen and while it looks up a library function for the
# first time. Garbage collection can run a finalizer in the middle of either (a dropped Module,
# Stream, Event or pool block), and those finalizers call the driver. Had that call been the first
# use of ``cuModuleUnload``, or of a type string, the thread waited on the lock it already held:
# a worker of the H200 suite hung that way in ``cuModuleUnload`` during a ``ffi.cast``. So the
# binding looks up every function it declares when it opens the library, and parses every type
# string it uses when it makes the FFI; after that no call of the binding takes cffi's lock.
FUNCTION_NAMES = tuple(dict.fromkeys(re.findall(r"\b(cu[A-Z]\w*)\s*\(", CDEF)))
FFI_TYPES = (
    "CUDA_MEMCPY2D *", "CUdeviceptr *", "CUgraphExecUpdateResultInfo *", "uint64_t *", "CUfunction *", "CUlaunchConfig *", "CUlaunchConfig",
    "CUlinkState *", "CUmodule *", "CUuuid *", "char[]", "const char **", "float *", "int *",
    "size_t *", "uint32_t[]", "uint64_t[]", "uintptr_t *", "uintptr_t", "unsigned long long *",
    "void *", "void **", "void *[4]", "void*", "void*[]",
)
