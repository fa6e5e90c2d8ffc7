// Warp-level matrix multiply-accumulate (PTX ISA §9.7.14, mma.sync). One wrapper per variant.
// Fragment maps (which lane holds which element) are in kernels/attention/fragment.h.
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, b, c;   sm_80+
// A 16x16 bf16 (4 regs of bf16x2), B 16x8 bf16 (2 regs), C/D 16x8 f32 (4 regs). D = A*B + C.
__device__ __forceinline__ void mma_m16n8k16_row_col_f32_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                              const uint32_t (&b)[2], const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 800, "mma.m16n8k16 bf16 needs sm_80");
#endif
}

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 d, a, b, c;   sm_80+   (as above, FP16 operands)
__device__ __forceinline__ void mma_m16n8k16_row_col_f32_f16(float (&d)[4], const uint32_t (&a)[4],
                                                             const uint32_t (&b)[2], const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 800, "mma.m16n8k16 f16 needs sm_80");
#endif
}

// mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 d, a, b, c;   sm_89+
// A 16x32 E4M3 (4 regs of 4 codes), B 32x8 E4M3 (2 regs), C/D 16x8 f32 (4 regs). D = A*B + C.
// (The kernels do not use it; `mxattn probe` measures its fragment maps, fragment.h mma_a8 / mma_b8.)
__device__ __forceinline__ void mma_m16n8k32_row_col_f32_e4m3(float (&d)[4], const uint32_t (&a)[4],
                                                              const uint32_t (&b)[2], const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 890, "mma.m16n8k32 e4m3 needs sm_89");
#endif
}

}  // namespace mxattn::ptx
