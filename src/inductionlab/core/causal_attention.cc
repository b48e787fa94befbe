// Causal softmax attention of small heads, forward and backward, one head at a time.
//
// Built by causal_attention.py for one (T, D): the longest sequence and the head
// dimension, both compile-time constants, D a power of two; a call runs t <= T positions.
// Every array is contiguous float32:
//   q, k, v, dz              [n, t, D]      n = batch x heads
//   z, dq, dk, dv            [n / nh, t, nh, D]: position-major, as the heads are joined
//                            for the output projection, and the gradients for the
//                            backward pass of the projections
//   p                        [n, t, t]      the pattern: softmax of scale q k^T, causal
// A head's queries are taken W at a time, one per vector lane: the softmax's maximum and
// sum over keys, and the gradient's sum over keys, run along the loop, lane by lane, never
// across lanes. A block's scores, pattern and partial sums stay in registers and on the
// stack (a few vectors per key: T = 4096 takes under 1 MB of stack with D = 8); only z and
// p (forward) and dq, dk, dv (backward) are written to memory. Where D = W (8), a block's
// rows go to and from its lanes by 8 x 8 transposes in registers, not float by float
// through the stack; the arithmetic, and so every bit of the results, is the same.
//
// heads_from_table and table_from_heads give layer 0's queries, keys and values from the
// [vocabulary, 3 heads D] product of the embedding with the projections, by letter, in the
// layout above, and that product's gradient: a row gather and its scatter-add.
#include <cstring>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#ifndef T
#error "define T (sequence length)"
#endif
#ifndef D
#error "define D (head dimension, a power of two)"
#endif

constexpr int W = 8;                  // lanes of a vector of scores
constexpr int NV = (T + W - 1) / W;   // score vectors per row
constexpr int TP = NV * W;            // row length padded to whole vectors

typedef float vd __attribute__((vector_size(4 * D)));
typedef float vw __attribute__((vector_size(4 * W)));
typedef int iw __attribute__((vector_size(4 * W)));

static inline vd load_d(const float *p) { vd v; std::memcpy(&v, p, sizeof v); return v; }
static inline void store_d(float *p, vd v) { std::memcpy(p, &v, sizeof v); }
static inline float sum_w(vw v) { float s = 0.f; for (int l = 0; l < W; l++) s += v[l]; return s; }

// e^x on W lanes for x <= 0: x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2, a
// degree-6 polynomial for e^r (the Cephes expf coefficients), times 2^n built in the
// exponent bits. Relative error about 1e-7; inputs below -87.3 give e^-87.3 (then masked
// or negligible beside the row's maximum, whose term is 1).
static inline vw exp_w(vw x) {
  const vw lowest = (vw){} - 87.3f;
  x = x < lowest ? lowest : x;
  const vw round = (vw){} + 12582912.f;  // 1.5 * 2^23: adding then subtracting rounds to an integer
  vw n = (x * 1.44269504088896341f + round) - round;
  vw r = x - n * 0.693359375f - n * -2.12194440e-4f;
  vw y = (vw){} + 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.f;
  iw bits = (__builtin_convertvector(n, iw) + 127) << 23;
  vw two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return y * two_n;
}

static inline vw load_w(const float *p) { vw v; std::memcpy(&v, p, sizeof v); return v; }
static inline void store_w(float *p, vw v) { std::memcpy(p, &v, sizeof v); }

// W x W floats, given as W vectors, transposed in place: r[i][j] becomes r[j][i].
static inline void transpose_w(vw r[W]) {
#if defined(__AVX__)
  static_assert(W == 8, "the AVX transpose takes 8 x 8 floats");
  __m256 a[8], b[8];
  for (int i = 0; i < 8; i++) a[i] = (__m256)r[i];
  for (int i = 0; i < 8; i += 2) {
    b[i] = _mm256_unpacklo_ps(a[i], a[i + 1]);
    b[i + 1] = _mm256_unpackhi_ps(a[i], a[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    a[i] = _mm256_shuffle_ps(b[i], b[i + 2], 0x44);
    a[i + 1] = _mm256_shuffle_ps(b[i], b[i + 2], 0xEE);
    a[i + 2] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0x44);
    a[i + 3] = _mm256_shuffle_ps(b[i + 1], b[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = (vw)_mm256_permute2f128_ps(a[i], a[i + 4], 0x20);
    r[i + 4] = (vw)_mm256_permute2f128_ps(a[i], a[i + 4], 0x31);
  }
#else
  float m[W][W], o[W][W];
  std::memcpy(m, r, sizeof m);
  for (int i = 0; i < W; i++)
    for (int j = 0; j < W; j++) o[j][i] = m[i][j];
  std::memcpy(r, o, sizeof o);
#endif
}

// The t rows of a [t, D] block as D vectors of TP lanes (a transpose, zero-padded).
static inline void columns(const float *a, int t, vw out[D][NV]) {
  if constexpr (D == W) {  // W rows at a time, transposed in registers
    for (int u = 0; u < NV; u++) {
      vw r[W];
      for (int l = 0; l < W; l++) r[l] = u * W + l < t ? load_w(a + (u * W + l) * D) : (vw){};
      transpose_w(r);
      for (int c = 0; c < D; c++) out[c][u] = r[c];
    }
  } else {
    float cols[D][TP];
    std::memset(cols, 0, sizeof cols);
    for (int j = 0; j < t; j++)
      for (int c = 0; c < D; c++) cols[c][j] = a[j * D + c];
    std::memcpy(out, cols, sizeof cols);
  }
}

// Lane l of the D vectors x, for the block's rows l < rows, stored as row l of a
// row-major [rows, D] array with rows `stride` floats apart.
static inline void store_rows(vw x[D], int rows, float *out, long stride) {
  if constexpr (D == W) {
    transpose_w(x);
    for (int l = 0; l < rows; l++) store_w(out + l * stride, x[l]);
  } else {
    float xc[D][W];
    std::memcpy(xc, x, sizeof xc);
    for (int l = 0; l < rows; l++)
      for (int c = 0; c < D; c++) out[l * stride + c] = xc[c][l];
  }
}

extern "C" void causal_attention_forward(long n, long nh, int t, float scale, const float *q,
                                         const float *k, const float *v, float *z, float *p) {
  // W queries at a time, one per lane: the softmax's reductions over keys run along the
  // loop, lane by lane, with no reduction across lanes.
  const iw lane = {0, 1, 2, 3, 4, 5, 6, 7};
  const vw minus_inf = (vw){} - __builtin_inff();
  for (long b = 0; b < n; b++) {
    const float *qb = q + b * t * D, *kb = k + b * t * D, *vb = v + b * t * D;
    // z position-major, [n / nh, t, nh, D]: head b % nh of batch element b / nh
    float *zb = z + (b / nh) * t * nh * D + (b % nh) * D, *pb = p + b * t * t;
    vw qt[D][NV];
    columns(qb, t, qt);
    for (int u = 0; u < NV; u++) {
      const int first = u * W;              // this block's first query
      const int keys = t < first + W ? t : first + W;  // keys any of its queries sees
      const int rows = t - first < W ? t - first : W;  // its queries
      vw s[TP];
      vw top = minus_inf;
      for (int j = 0; j < keys; j++) {
        vw x = (vw){};
        for (int c = 0; c < D; c++) x += kb[j * D + c] * qt[c][u];
        x *= scale;
        x = lane + first >= j ? x : minus_inf;  // query first + lane sees key j <= it
        s[j] = x;
        top = top > x ? top : x;
      }
      vw total = (vw){};
      for (int j = 0; j < keys; j++) {
        vw e = exp_w(s[j] - top);
        e = lane + first >= j ? e : (vw){};
        s[j] = e;
        total += e;
      }
      const vw inv = 1.f / total;
      vw zt[D];
      for (int c = 0; c < D; c++) zt[c] = (vw){};
      for (int j = 0; j < keys; j++) {
        vw pj = s[j] * inv;
        for (int c = 0; c < D; c++) zt[c] += vb[j * D + c] * pj;
        s[j] = pj;
      }
      // the block's pattern rows: W keys at a time, transposed to queries' rows
      for (int j0 = 0; j0 < keys; j0 += W) {
        vw tile[W];
        for (int i = 0; i < W; i++) tile[i] = j0 + i < keys ? s[j0 + i] : (vw){};
        transpose_w(tile);
        const int width = t - j0 < W ? t - j0 : W;
        for (int l = 0; l < rows; l++) {
          float *row = pb + (first + l) * t + j0;
          if (width == W) store_w(row, tile[l]);
          else std::memcpy(row, &tile[l], sizeof(float) * width);
        }
      }
      for (int l = 0; l < rows; l++)
        std::memset(pb + (first + l) * t + keys, 0, sizeof(float) * (t - keys));
      store_rows(zt, rows, zb + first * nh * D, nh * D);
    }
  }
}

// Given dz, the gradient of the loss with respect to z: with dp = dz v^T and
// ds = p * (dp - rowsum(p * dp)) (the softmax's backward), dq = scale ds k,
// dk = scale ds^T q, dv = p^T dz. W queries at a time, one per lane, as in the forward
// pass; dk and dv gather each block's queries into every key's row.
extern "C" void causal_attention_backward(long n, long nh, int t, float scale, const float *q,
                                          const float *k, const float *v, const float *p,
                                          const float *dz, float *dq, float *dk, float *dv) {
  for (long b = 0; b < n; b++) {
    const float *qb = q + b * t * D, *kb = k + b * t * D, *vb = v + b * t * D;
    const float *pb = p + b * t * t, *dzb = dz + b * t * D;
    const long out = (b / nh) * t * nh * D + (b % nh) * D;  // position-major, as z
    float *dqb = dq + out;
    vw dzt[D][NV];
    columns(dzb, t, dzt);
    vd dkr[T], dvr[T];
    for (int j = 0; j < t; j++) {
      dkr[j] = (vd){};
      dvr[j] = (vd){};
    }
    for (int u = 0; u < NV; u++) {
      const int first = u * W;
      const int keys = t < first + W ? t : first + W;
      const int rows = t - first < W ? t - first : W;
      // the block's pattern, key by key, its queries on lanes: W keys at a time, the
      // rows' entries past their query (zero, as the forward pass wrote them) included
      vw pt[TP], dp[TP];
      for (int j0 = 0; j0 < keys; j0 += W) {
        const int width = keys - j0 < W ? keys - j0 : W;
        vw tile[W];
        for (int l = 0; l < W; l++) {
          tile[l] = (vw){};
          if (l >= rows) continue;
          const float *row = pb + (first + l) * t + j0;
          if (width == W) tile[l] = load_w(row);
          else std::memcpy(&tile[l], row, sizeof(float) * width);
        }
        transpose_w(tile);
        for (int i = 0; i < width; i++) pt[j0 + i] = tile[i];
      }
      vw rowsum = (vw){};
      for (int j = 0; j < keys; j++) {
        vw x = (vw){};
        for (int c = 0; c < D; c++) x += vb[j * D + c] * dzt[c][u];
        dp[j] = x;
        rowsum += pt[j] * x;
      }
      vd qrow[W], dzrow[W];
      for (int l = 0; l < rows; l++) {
        qrow[l] = load_d(qb + (first + l) * D);
        dzrow[l] = load_d(dzb + (first + l) * D);
      }
      vw dqt[D];
      for (int c = 0; c < D; c++) dqt[c] = (vw){};
      for (int j = 0; j < keys; j++) {
        vw ds = pt[j] * (dp[j] - rowsum) * scale;
        for (int c = 0; c < D; c++) dqt[c] += kb[j * D + c] * ds;
        float dsa[W], pa[W];
        std::memcpy(dsa, &ds, sizeof dsa);
        std::memcpy(pa, &pt[j], sizeof pa);
        vd dk0 = (vd){}, dk1 = (vd){}, dv0 = (vd){}, dv1 = (vd){};
        // queries before key j see it not (their ds and p are zero): start at the even
        // query at or below j, so that every term still joins the sum it joined
        int l = j > first ? (j - first) & ~1 : 0;
        for (; l + 1 < rows; l += 2) {
          dk0 += dsa[l] * qrow[l];
          dk1 += dsa[l + 1] * qrow[l + 1];
          dv0 += pa[l] * dzrow[l];
          dv1 += pa[l + 1] * dzrow[l + 1];
        }
        if (l < rows) {
          dk0 += dsa[l] * qrow[l];
          dv0 += pa[l] * dzrow[l];
        }
        dkr[j] += dk0 + dk1;
        dvr[j] += dv0 + dv1;
      }
      store_rows(dqt, rows, dqb + first * nh * D, nh * D);
    }
    for (int j = 0; j < t; j++) {
      store_d(dk + out + j * nh * D, dkr[j]);
      store_d(dv + out + j * nh * D, dvr[j]);
    }
  }
}

// Layer 0's queries, keys and values of every head, read from a table of the embedding
// times the projections: table [v, 3 nh D] (queries, keys, values; heads in order within
// each), tok [nb, t] the letters; q, k, v [nb, nh, t, D] contiguous. Returns the first
// position whose letter is not a row of the table, or -1 (then nothing is written).
extern "C" long heads_from_table(long nb, int t, long nh, long v, const float *table,
                                 const long *tok, float *q, float *k, float *vv) {
  const long width = 3 * nh * D;
  for (long i = 0; i < nb * t; i++)
    if (tok[i] < 0 || tok[i] >= v) return i;
  float *outs[3] = {q, k, vv};
  for (int part = 0; part < 3; part++)
    for (long b = 0; b < nb; b++)
      for (long h = 0; h < nh; h++) {
        float *o = outs[part] + ((b * nh + h) * t) * D;
        const float *column = table + (part * nh + h) * D;
        for (int j = 0; j < t; j++)
          std::memcpy(o + j * D, column + tok[b * t + j] * width, sizeof(float) * D);
      }
  return -1;
}

// The gradient of the table above, given those of the queries, keys and values
// (dq, dk, dv [nb, t, nh, D], position-major as causal_attention_backward writes them):
// dtable [v, 3 nh D], zeroed by the caller, gets every position's row added to its
// letter's row, positions in order (batch, then position) for every element.
extern "C" void table_from_heads(long nb, int t, long nh, const long *tok, const float *dq,
                                 const float *dk, const float *dv, float *dtable) {
  const long width = 3 * nh * D;
  const float *grads[3] = {dq, dk, dv};
  for (long i = 0; i < nb * t; i++) {
    float *row = dtable + tok[i] * width;
    for (int part = 0; part < 3; part++)
      for (long h = 0; h < nh; h++) {
        float *cell = row + (part * nh + h) * D;
        store_d(cell, load_d(cell) + load_d(grads[part] + (i * nh + h) * D));
      }
  }
}
