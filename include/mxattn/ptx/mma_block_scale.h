// Block-scaled warp MMA of sm_120a (PTX ISA §9.7.14.5.14, "Block Scaling for mma.sync"): the MX codes and
// their scales go straight into the tensor cores, D += (A x scale_A) (B x scale_B).
//
//   m16n8k32 kind::mxf8f6f4, scale_vec::1X, UE8M0: A 16x32 and B 32x8 one element a byte (E4M3 and E5M2
//     whole bytes; E2M3 / E3M2 in bits 5:0; E2M1 in bits 5:2), one scale a row of A and a column of B.
//     Fragments as the 8-bit m16n8k32 (kernels/attention/fragment.h mma_a8 / mma_b8). SASS: QMMA.SF.16832.
//   m16n8k64 kind::mxf4nvf4: A 16x64 and B 64x8 E2M1 packed eight a register (nibble j of a register is k
//     8t + j + 32 (r / 2) of A, 8t + j + 32 r of B); scale_vec::2X with UE8M0 (a scale per 32 k) or 4X with
//     UE4M3 (NVFP4: a scale per 16 k), the k blocks in the scale register's bytes from the lowest. SASS:
//     OMMA.SF.16864.
//
// The scale registers (one 32-bit register a lane) with the selectors {byte-id, thread-id} = {0, 0} used
// here: A's row g (= lane / 4) in lane 4g, row g + 8 in lane 4g + 1; B's column g in lane 4g; 1X reads byte
// 0. `mxattn probe` measures this on an sm_120 GPU (probe/probe.h); the CPU model holds it otherwise.
// D is FP32, accumulated in place. On other architectures these trap: launchers pick the kernels that use
// them only on an sm_120 GPU.
#pragma once
#include <cstdint>

namespace mxattn::ptx {

enum class MmaElem { E4M3, E5M2, E3M2, E2M3, E2M1 };

#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
#define MXATTN_MMA_MXF8F6F4(AT, BT)                                                                           \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32." #AT "." #BT \
               ".f32.ue8m0 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sa), "r"(sb))
#define MXATTN_MMA_MXF8F6F4_B(AT)                              \
  if constexpr (B == MmaElem::E4M3) MXATTN_MMA_MXF8F6F4(AT, e4m3); \
  if constexpr (B == MmaElem::E5M2) MXATTN_MMA_MXF8F6F4(AT, e5m2); \
  if constexpr (B == MmaElem::E3M2) MXATTN_MMA_MXF8F6F4(AT, e3m2); \
  if constexpr (B == MmaElem::E2M3) MXATTN_MMA_MXF8F6F4(AT, e2m3); \
  if constexpr (B == MmaElem::E2M1) MXATTN_MMA_MXF8F6F4(AT, e2m1);
#endif

// mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.A.B.f32.ue8m0   sm_120a
template <MmaElem A, MmaElem B>
__device__ __forceinline__ void mma_m16n8k32_mxf8f6f4(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                      uint32_t sa, uint32_t sb) {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
  if constexpr (A == MmaElem::E4M3) { MXATTN_MMA_MXF8F6F4_B(e4m3) }
  if constexpr (A == MmaElem::E5M2) { MXATTN_MMA_MXF8F6F4_B(e5m2) }
  if constexpr (A == MmaElem::E3M2) { MXATTN_MMA_MXF8F6F4_B(e3m2) }
  if constexpr (A == MmaElem::E2M3) { MXATTN_MMA_MXF8F6F4_B(e2m3) }
  if constexpr (A == MmaElem::E2M1) { MXATTN_MMA_MXF8F6F4_B(e2m1) }
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3   sm_120a
// (NVFP4: a UE4M3 scale per 16 k, bytes 0-3 of the scale register.)
__device__ __forceinline__ void mma_m16n8k64_e2m1_ue4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                        uint32_t sa, uint32_t sb) {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sa), "r"(sb));
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0   sm_120a
// (MXFP4: a UE8M0 scale per 32 k, bytes 0 and 1 of the scale register.)
__device__ __forceinline__ void mma_m16n8k64_e2m1_ue8m0(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                        uint32_t sa, uint32_t sb) {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sa), "r"(sb));
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

#undef MXATTN_MMA_MXF8F6F4
#undef MXATTN_MMA_MXF8F6F4_B

}  // namespace mxattn::ptx
