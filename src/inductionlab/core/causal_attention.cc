// Causal softmax attention of small heads, forward and backward, one head at a time.
//
// Built by causal_attention.py for one (T, D): the longest sequence and the head
// dimension, both compile-time constants, D a power of two; a call runs t <= T positions.
// Every array is contiguous float32:
//   q, k, v, z, dq, dk, dv   [n, t, D]      n = batch x heads
//   p                        [n, t, t]      the pattern: softmax of scale q k^T, causal
// A head's q, k, v (T x D), its scores row and its pattern row stay in registers and the
// stack; only z and p (forward) and dq, dk, dv (backward) are written to memory.
#include <cstring>

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

// The t rows of a [t, D] block as D vectors of TP lanes (a transpose, zero-padded).
static inline void columns(const float *a, int t, vw out[D][NV]) {
  float cols[D][TP];
  std::memset(cols, 0, sizeof cols);
  for (int j = 0; j < t; j++)
    for (int c = 0; c < D; c++) cols[c][j] = a[j * D + c];
  std::memcpy(out, cols, sizeof cols);
}

extern "C" void causal_attention_forward(long n, int t, float scale, const float *q,
                                         const float *k, const float *v, float *z, float *p) {
  const iw lane = {0, 1, 2, 3, 4, 5, 6, 7};
  const vw minus_inf = (vw){} - __builtin_inff();
  for (long b = 0; b < n; b++) {
    const float *qb = q + b * t * D, *vb = v + b * t * D;
    float *zb = z + b * t * D, *pb = p + b * t * t;
    vw kt[D][NV];
    columns(k + b * t * D, t, kt);
    vd vrow[T];
    for (int j = 0; j < t; j++) vrow[j] = load_d(vb + j * D);
    for (int i = 0; i < t; i++) {
      vw s[NV];
      for (int u = 0; u < NV; u++) s[u] = (vw){};
      for (int c = 0; c < D; c++) {
        float qc = qb[i * D + c] * scale;
        for (int u = 0; u < NV; u++)
          if (u * W <= i) s[u] += qc * kt[c][u];
      }
      vw top = minus_inf;
      for (int u = 0; u < NV; u++) {
        s[u] = lane + u * W <= i ? s[u] : minus_inf;
        top = top > s[u] ? top : s[u];
      }
      float m = top[0];
      for (int l = 1; l < W; l++) m = top[l] > m ? top[l] : m;
      vw total = (vw){};
      for (int u = 0; u < NV; u++) {
        if (u * W > i) { s[u] = (vw){}; continue; }
        vw e = exp_w(s[u] - m);
        s[u] = lane + u * W <= i ? e : (vw){};
        total += s[u];
      }
      float inv = 1.f / sum_w(total);
      float row[TP];
      for (int u = 0; u < NV; u++) {
        s[u] *= inv;
        std::memcpy(row + u * W, &s[u], sizeof s[u]);
      }
      std::memcpy(pb + i * t, row, sizeof(float) * t);
      vd zi = (vd){};
      for (int j = 0; j <= i; j++) zi += row[j] * vrow[j];
      store_d(zb + i * D, zi);
    }
  }
}

// Given dz, the gradient of the loss with respect to z: with dp = dz v^T and
// ds = p * (dp - rowsum(p * dp)) (the softmax's backward), dq = scale ds k,
// dk = scale ds^T q, dv = p^T dz.
extern "C" void causal_attention_backward(long n, int t, float scale, const float *q,
                                          const float *k, const float *v, const float *p,
                                          const float *dz, float *dq, float *dk, float *dv) {
  for (long b = 0; b < n; b++) {
    const float *qb = q + b * t * D, *kb = k + b * t * D;
    const float *pb = p + b * t * t, *dzb = dz + b * t * D;
    vw vt[D][NV];
    columns(v + b * t * D, t, vt);
    vd krow[T], dkr[T], dvr[T];
    for (int j = 0; j < t; j++) {
      krow[j] = load_d(kb + j * D);
      dkr[j] = (vd){};
      dvr[j] = (vd){};
    }
    for (int i = 0; i < t; i++) {
      float prow[TP];
      std::memset(prow, 0, sizeof prow);
      std::memcpy(prow, pb + i * t, sizeof(float) * t);
      vw pv[NV];
      std::memcpy(pv, prow, sizeof pv);
      vd dzi = load_d(dzb + i * D), qi = load_d(qb + i * D);
      vw dp[NV];
      for (int u = 0; u < NV; u++) dp[u] = (vw){};
      for (int c = 0; c < D; c++)
        for (int u = 0; u < NV; u++)
          if (u * W <= i) dp[u] += dzi[c] * vt[c][u];
      vw weighted = (vw){};
      for (int u = 0; u < NV; u++) weighted += pv[u] * dp[u];
      float rowsum = sum_w(weighted);
      float ds[TP];
      for (int u = 0; u < NV; u++) {
        vw x = pv[u] * (dp[u] - rowsum) * scale;
        std::memcpy(ds + u * W, &x, sizeof x);
      }
      vd dqi = (vd){};
      for (int j = 0; j <= i; j++) {
        dqi += ds[j] * krow[j];
        dkr[j] += ds[j] * qi;
        dvr[j] += prow[j] * dzi;
      }
      store_d(dq + b * t * D + i * D, dqi);
    }
    for (int j = 0; j < t; j++) {
      store_d(dk + b * t * D + j * D, dkr[j]);
      store_d(dv + b * t * D + j * D, dvr[j]);
    }
  }
}
