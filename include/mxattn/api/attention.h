// Fused attention over block-scaled (MX) Q, K, V: host launchers.
//
// Tensors are [B, S, H, D] (DESIGN.md §2). A block-scaled operand is "rows of packed codes along
// the block axis" addressed by three outer indices, exactly as reference/quantize.h's
// QuantizedTensor and the quantize launcher store them:
//   Q, K  blocked along D:      outer (b, s, h), rows of D codes
//   V     blocked along S_kv:   outer (b, h, d), rows of S_kv codes (channel-major, as cuDNN's MXFP8)
// Scales are row-major (one byte per block, blocks along the row); the 128x4 tiled layout is not read
// here. Element formats of 4, 6 or 8 bits; block sizes 8..128. Q may instead be dense BF16/FP16.
// Output BF16 or FP16 [B, S_q, H_q, D] with strides, plus the natural-log LSE [B, H_q, S_q] (FP32).
// The launcher only enqueues work on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "mxattn/api/quantize.h"
#include "mxattn/api/status.h"
#include "mxattn/format/format.h"
#include "mxattn/format/pack.h"
#include "mxattn/reference/attention.h"

namespace mxattn {

struct MxOperand {
  Format format;
  QuantizedConstBuffers buffers;  // tensor_scale: device S_enc, read where format.tensor_scale
  int64_t code_strides[3] = {0, 0, 0};   // bytes, per outer index
  int64_t scale_strides[3] = {0, 0, 0};  // bytes, per outer index

  // Rows stored back to back (row_bytes = packed_bytes(cols, bits), blocks_per_row scale bytes each),
  // outer extents n0 x n1 x n2: what the CPU reference and the quantize launcher write.
  static MxOperand contiguous(const Format& format, QuantizedConstBuffers buffers, int64_t n0, int64_t n1,
                              int64_t n2, int64_t cols);
};

// A dense tensor [B, S, H, D]: element strides of B, S, H; D contiguous.
struct DenseOperand {
  const void* data = nullptr;
  DType dtype = DType::BF16;  // BF16 or F16
  int64_t strides[3] = {0, 0, 0};
  static DenseOperand contiguous(const void* data, DType dtype, int64_t seq, int64_t heads, int64_t head_dim);
};
struct DenseOutput {
  void* data = nullptr;
  DType dtype = DType::BF16;  // BF16 or F16
  int64_t strides[3] = {0, 0, 0};
  static DenseOutput contiguous(void* data, DType dtype, int64_t seq, int64_t heads, int64_t head_dim);
};

// Which prefill kernel runs. Auto picks the fastest kernel that keeps the portable kernel's accuracy: on
// an sm_90 GPU HopperExact where it takes the arguments and Q and K fold exactly (E8M0 block scales, or
// dense Q), 5-10x the portable kernel's speed (bench/prefill_notes.md); on an sm_120 GPU BlockScaled where
// it takes the arguments; Portable otherwise.
enum class PrefillKernel {
  Auto,
  Portable,   // mma.sync with BF16 operands: exact dequantization (DESIGN.md §3), sm_80+
  HopperFp8,  // wgmma with E4M3 operands (sm_90a): block scales folded into the operands, P in E4M3.
              // Takes formats with blocks of 16 or more whose elements have at most 4 significant bits
              // (every named format but MXINT8), MX Q or dense Q at head_dim 64 or 128 (two E4M3 terms
              // a row: exact for BF16), and a positive softmax scale. E8M0 scales fold exactly; UE4M3
              // scales (NVFP4) round an element times the scale's significand to E4M3. O's FP8 accumulator
              // (about 14 bits) restarts every 128-512 keys, the parts added in FP32, so the error does not
              // grow with the sequence (kernels/attention/hopper/accumulate.h).
  HopperExact,  // the exact mode of HopperFp8: P and V in BF16 (P V at BF16 rate, P rounded to 8 significant
                // bits instead of 4), so its error is the portable kernel's. Q and K fold to E4M3 as in
                // HopperFp8 and take the same formats; V any format with FP16 element values (MXINT8 too),
                // exact in BF16 with UE4M3 scales too.
  BlockScaled,  // block-scaled mma.sync (sm_120a, consumer Blackwell): the MX codes and their scales go to the
                // tensor cores as they are (S per k-step with Q's and K's scales, P V per 32 keys with P in E4M3
                // and V's scales). Takes MX Q, K and V of one format: E4M3, E5M2, E2M3, E3M2 or E2M1 elements with
                // E8M0 scales over blocks of 32 (MXFP4's S on packed E2M1, k64), or NVFP4 (S on packed E2M1 with
                // its UE4M3 scales; V folded into E4M3 with a UE8M0 scale per 32 keys, as HopperFp8 folds it).
                // Compiled and checked against a CPU model of the instructions here; not yet run on an sm_120 GPU
                // (kernels/attention/sm120/).
  BlockScaledEmulated,  // BlockScaled's kernel with its block-scaled instructions emulated (warp shuffles, FP32
                        // sums; kernels/attention/sm120/mma.h): the same arguments, on any GPU this build has
                        // code for, slowly. For checking that kernel where no sm_120 GPU is at hand; Auto never
                        // picks it.
};

inline const char* prefill_kernel_name(PrefillKernel k) {
  switch (k) {
    case PrefillKernel::Portable: return "portable";
    case PrefillKernel::HopperFp8: return "hopper";
    case PrefillKernel::HopperExact: return "hopper-exact";
    case PrefillKernel::BlockScaled: return "block-scaled";
    case PrefillKernel::BlockScaledEmulated: return "block-scaled-emulated";
    default: return "auto";
  }
}

struct PrefillArgs {
  AttentionShape shape;      // head_dim 64, 128 or 256; heads_q a multiple of heads_kv
  AttentionOptions options;  // causal (bottom-right), softmax_scale (0: 1/sqrt(D))
  bool q_is_mx = true;
  MxOperand q_mx;            // when q_is_mx
  DenseOperand q_dense;      // otherwise (FP16 is rounded to BF16 on load)
  MxOperand k, v;
  DenseOutput out;
  float* lse = nullptr;      // [B, H_q, S_q], may be null
  PrefillKernel kernel = PrefillKernel::Auto;

  // A packed batch of sequences of their own lengths (FlashAttention's varlen layout): with cu_seqlens_q
  // and cu_seqlens_kv set (device int32, shape.batch + 1 non-decreasing offsets each, from 0), Q, K, V
  // and the output are a batch of one (their batch strides unused) holding shape.batch sequences back to
  // back: sequence b's queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 of Q and the output,
  // its keys rows cu_seqlens_kv[b] .. of K and columns cu_seqlens_kv[b] .. of V's rows, as many as
  // seqused_kv[b] (device int32, shape.batch entries) where given, else up to the next offset.
  // shape.seq_q and seq_kv bound the lengths; the LSE stays [B, H_q, S_q], rows past a sequence's length
  // unwritten. V is blocked along the keys, so each sequence's keys start a block: every cu_seqlens_kv[b]
  // a multiple of V's block size and of 16 (pad between sequences and say how many keys are used in
  // seqused_kv; V's padding must be finite: it shares the last block's scale). The offsets live on the
  // device, where the launcher cannot check them: a sequence whose offsets break these rules computes
  // nothing and gets NaN in its LSE rows.
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_kv = nullptr;
  const int32_t* seqused_kv = nullptr;
};

// Prefill attention with the kernel args.kernel names; an error names the argument the chosen kernel
// cannot take.
Status attention_prefill(const PrefillArgs& args, cudaStream_t stream);

}  // namespace mxattn
