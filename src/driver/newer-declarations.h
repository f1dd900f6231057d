/*
 * Driver entry points newer than the cuda.h the bindings are generated from (CUDA 13.0), declared
 * as NVIDIA's driver API reference documents them, each with the release that added it.
 * scripts/gen-bindings.mjs reads this file after cuda.h, with its types; once cuda.h declares one
 * of them, the two declarations must agree (the generator says so otherwise). A driver older than
 * the release lacks the symbol: the call is then refused with CUDA error 801, "this driver predates
 * the call".
 */

/* CUDA 13.1: the id tools (Nsight, CUPTI) use for a node, and its id within its graph (the one
 * cuGraphDebugDotPrint prints). */
CUresult CUDAAPI cuGraphNodeGetToolsId(CUgraphNode hNode, unsigned long long *toolsNodeId);
CUresult CUDAAPI cuGraphNodeGetLocalId(CUgraphNode hNode, unsigned int *nodeId);
