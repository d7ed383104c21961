/* example_util.h - what the examples share: starting and finishing the
   communicator, stopping on a failed cc call, filling the seeds' tensors,
   moving column blocks in and out of contiguous buffers, and printing tensors
   the way the seeds' Python programs printed them. Each example keeps its
   collective call, and why its buffers look as they do, in its own file.

   An example reads:

       cc_comm *c = ex_start();                  cc_comm_init, or exit
       int rank = cc_comm_rank(c);
       ...
       ex_check(c, cc_all_reduce(c, ...), "cc_all_reduce");
       ...
       return ex_finish(c);                      cc_comm_destroy, or exit

   The seeds print three ways, and each has a formatter here:

       print(tensor)              torch:  tensor([ 0.1697, -1.8013])   ex_tensor_*
       print(tensor.numpy())      numpy:  [[ 0.  1. 10. 11.]]          ex_numpy_*
       print(tensor.tolist())     Python: [[6.0, 6.0, 6.0]]            ex_tolist2_f32

   Each follows its model's rules for the values the examples use: torch pads
   every element to the widest of the nonzero ones and picks integer mode
   ("10."), four decimals ("0.1697") or scientific notation ("1.0000e+08") as
   torch/_tensor_str.py does; numpy pads the integer and fraction parts of
   every element to the widest (numpy's scientific notation is not
   reproduced); Python lists use the shortest repr ("6.0").

   One line per print: where torch or numpy would break a 2-D tensor over
   several lines, the line break and the indentation after it become one space,
       tensor([[0., 0.],             ->   tensor([[0., 0.], [1., 1.]])
               [1., 1.]])
   so that the lines of all ranks can be sorted and compared with a file
   (tests/user/test_examples.sh). ex_print writes a line with one write, so lines
   from different ranks never mix.

   Every formatter fills an ex_text and returns its string, for printf's %s;
   text past its 2 KiB is cut. Everything is static inline so that an example
   using part of it still builds under -Wall -Werror. Include it after cc.h. */
#ifndef EXAMPLE_UTIL_H_INCLUDED
#define EXAMPLE_UTIL_H_INCLUDED

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#  define EX__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define EX__PRINTF(f, a)
#endif

/* ------------------------------------------------------------ checking */

/* ex_check - stop the program when a cc call failed: print which call, the
 *   result and the communicator's detail (cc_comm_last_error) on stderr, and
 *   exit with status 1; ccrun then stops the other ranks. Pass c = NULL where
 *   there is no communicator: cc_comm_init (its detail is then
 *   cc_comm_last_error(NULL)) and cc_comm_destroy. */
static inline void ex_check(const cc_comm *c, cc_result r, const char *what) {
  const char *detail;
  if (r == CC_OK) return;
  detail = cc_comm_last_error(c);
  if (c) fprintf(stderr, "rank %d: ", cc_comm_rank(c));
  fprintf(stderr, "%s failed: %s\n", what, cc_strerror(r));
  if (detail && detail[0]) fprintf(stderr, "  %s\n", detail);
  exit(1);
}

/* ex_start - this process's communicator: cc_comm_init(&c, NULL) takes the
 *   rank, the world size and the rendezvous from the environment that ccrun
 *   sets (torchrun's and Open MPI's work too). Exits as ex_check does when
 *   it fails. */
static inline cc_comm *ex_start(void) {
  cc_comm *c = NULL;
  ex_check(NULL, cc_comm_init(&c, NULL), "cc_comm_init");
  return c;
}

/* ex_finish - cc_comm_destroy(c), checked; returns 0, main's status, for
 *   `return ex_finish(c);`. */
static inline int ex_finish(cc_comm *c) {
  ex_check(NULL, cc_comm_destroy(c), "cc_comm_destroy");
  return 0;
}

/* ex_need_ranks - go on only in a world of `least` to `most` ranks (most
 *   INT_MAX: no upper bound); else say on stderr, in one line per rank, what
 *   the example `name` needs and how to run it, destroy the communicator and
 *   exit with status 1. */
static inline void ex_need_ranks(cc_comm *c, int least, int most, const char *name) {
  const int size = cc_comm_size(c);
  char need[64];
  if (size >= least && size <= most) return;
  if (least == most)
    snprintf(need, sizeof need, "%d", least);
  else if (most == INT_MAX)
    snprintf(need, sizeof need, "at least %d", least);
  else
    snprintf(need, sizeof need, "%d to %d", least, most);
  fprintf(stderr, "%s: needs %s ranks, got %d; run: ccrun -n %d build/examples/%s\n", name,
          need, size, most == INT_MAX ? least : most, name);
  cc_comm_destroy(c);
  exit(1);
}

/* ex_alloc - `n` zeroed elements of `size` bytes, or exit with a message. */
static inline void *ex_alloc(size_t n, size_t size) {
  void *p = NULL;
  if (size == 0 || n <= (size_t)PTRDIFF_MAX / size) p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "out of memory (%lu elements of %lu bytes)\n", (unsigned long)n,
            (unsigned long)size);
    exit(1);
  }
  return p;
}

/* ------------------------------------------------------------ tensors */

/* The seeds' tensors, in C: row-major float32 buffers. */

/* ex_full_f32 - torch.full: every one of the n elements is x. */
static inline void ex_full_f32(float *v, size_t n, float x) {
  size_t i;
  for (i = 0; i < n; i++) v[i] = x;
}

/* ex_fill_rows_f32 - a rows x cols matrix whose row i is all first + i. */
static inline void ex_fill_rows_f32(float *m, size_t rows, size_t cols, float first) {
  size_t i;
  for (i = 0; i < rows; i++) ex_full_f32(m + i * cols, cols, first + (float)i);
}

/* ex_fill_cols_f32 - a rows x cols matrix whose column j is all first + j. */
static inline void ex_fill_cols_f32(float *m, size_t rows, size_t cols, float first) {
  size_t i, j;
  for (i = 0; i < rows; i++)
    for (j = 0; j < cols; j++) m[i * cols + j] = first + (float)j;
}

/* Copies a rows x width block from src, whose rows lie src_stride floats
 * apart, to dst, whose rows lie dst_stride apart. */
static inline void ex__copy_block(float *dst, size_t dst_stride, const float *src,
                                  size_t src_stride, size_t rows, size_t width) {
  size_t i;
  for (i = 0; i < rows; i++)
    memcpy(dst + i * dst_stride, src + i * src_stride, width * sizeof *dst);
}

/* ex_split_cols_f32 - torch.split(m, width, dim=1), each piece made
 *   contiguous: the rows x (blocks*width) matrix m is cut into `blocks`
 *   column blocks of rows x width, laid one after another in out (block k at
 *   out + k*rows*width), the layout a collective sends from. A column of a
 *   row-major matrix is not contiguous: its numbers lie blocks*width apart. */
static inline void ex_split_cols_f32(float *out, const float *m, size_t rows,
                                     size_t blocks, size_t width) {
  size_t k;
  for (k = 0; k < blocks; k++)
    ex__copy_block(out + k * rows * width, width, m + k * width, blocks * width, rows,
                   width);
}

/* ex_cat_cols_f32 - torch.cat(pieces, dim=1), the inverse of
 *   ex_split_cols_f32: `blocks` contiguous rows x width blocks, one after
 *   another in `pieces` (as a gather lays them), put side by side into the
 *   rows x (blocks*width) matrix m: block k becomes columns k*width to
 *   k*width + width - 1. */
static inline void ex_cat_cols_f32(float *m, const float *pieces, size_t rows,
                                   size_t blocks, size_t width) {
  size_t k;
  for (k = 0; k < blocks; k++)
    ex__copy_block(m + k * width, blocks * width, pieces + k * rows * width, width, rows,
                   width);
}

/* ------------------------------------------------------------ printing */

/* ex_print - printf one whole line and flush it at once. */
static inline void ex_print(const char *fmt, ...) EX__PRINTF(1, 2);
static inline void ex_print(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

typedef struct ex_text {
  char s[2048];
  size_t len;
} ex_text;

static inline void ex__cat(ex_text *t, const char *fmt, ...) EX__PRINTF(2, 3);
static inline void ex__cat(ex_text *t, const char *fmt, ...) {
  va_list ap;
  int n;
  if (t->len + 1 >= sizeof t->s) return;
  va_start(ap, fmt);
  n = vsnprintf(t->s + t->len, sizeof t->s - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
  if (t->len >= sizeof t->s) t->len = sizeof t->s - 1;
}

static inline void ex__clear(ex_text *t) {
  t->s[0] = 0;
  t->len = 0;
}

typedef enum ex__kind { EX__F32, EX__I32, EX__I64 } ex__kind;

static inline double ex__f(const void *v, ex__kind k, size_t i) {
  switch (k) {
    case EX__F32: return (double)((const float *)v)[i];
    case EX__I32: return (double)((const int32_t *)v)[i];
    default: return (double)((const int64_t *)v)[i];
  }
}

static inline long long ex__i(const void *v, ex__kind k, size_t i) {
  return k == EX__I32 ? (long long)((const int32_t *)v)[i]
                      : (long long)((const int64_t *)v)[i];
}

/* --- torch: the rules of torch/_tensor_str.py's _Formatter, precision 4 --- */

typedef struct ex__torch_fmt {
  int floating, int_mode, sci_mode, width;
} ex__torch_fmt;

/* One element without padding; returns its length. */
static inline int ex__torch_elem(char *s, size_t cap, const ex__torch_fmt *f,
                                 const void *v, ex__kind k, size_t i) {
  double x;
  if (!f->floating) return snprintf(s, cap, "%lld", ex__i(v, k, i));
  x = ex__f(v, k, i);
  if (f->sci_mode) return snprintf(s, cap, "%.4e", x);
  if (f->int_mode) return snprintf(s, cap, isfinite(x) ? "%.0f." : "%.0f", x);
  return snprintf(s, cap, "%.4f", x);
}

/* The width and mode shared by all n elements of one tensor. */
static inline void ex__torch_fmt_init(ex__torch_fmt *f, const void *v, ex__kind k,
                                      size_t n) {
  char s[64];
  double lo = 0, hi = 0;
  size_t i, nonzero = 0;
  f->floating = (k == EX__F32);
  f->int_mode = 1;
  f->sci_mode = 0;
  f->width = 1;
  if (!f->floating) {
    for (i = 0; i < n; i++) {
      int w = snprintf(s, sizeof s, "%lld", ex__i(v, k, i));
      if (w > f->width) f->width = w;
    }
    return;
  }
  /* torch looks at the finite nonzero elements only */
  for (i = 0; i < n; i++) {
    double x = ex__f(v, k, i);
    if (!isfinite(x) || x == 0) continue;
    if (nonzero == 0 || fabs(x) < lo) lo = fabs(x);
    if (nonzero == 0 || fabs(x) > hi) hi = fabs(x);
    if (x != ceil(x)) f->int_mode = 0;
    nonzero++;
  }
  if (nonzero == 0) return;
  if (hi / lo > 1000.0 || hi > 1.0e8 || (!f->int_mode && lo < 1.0e-4))
    f->sci_mode = 1;
  for (i = 0; i < n; i++) {
    double x = ex__f(v, k, i);
    int w;
    if (!isfinite(x) || x == 0) continue;
    w = ex__torch_elem(s, sizeof s, f, v, k, i);
    if (w > f->width) f->width = w;
  }
}

/* torch's repr of a 1-D (rows == 0) or 2-D tensor, appended to t. */
static inline void ex__torch(ex_text *t, const void *v, ex__kind k, size_t rows,
                             size_t cols) {
  ex__torch_fmt f;
  char s[64];
  size_t r, j, nrows = rows ? rows : 1;
  ex__torch_fmt_init(&f, v, k, nrows * cols);
  ex__cat(t, "tensor(");
  if (rows) ex__cat(t, "[");
  for (r = 0; r < nrows; r++) {
    ex__cat(t, r ? ", [" : "[");
    for (j = 0; j < cols; j++) {
      ex__torch_elem(s, sizeof s, &f, v, k, r * cols + j);
      ex__cat(t, "%s%*s", j ? ", " : "", f.width, s);
    }
    ex__cat(t, "]");
  }
  if (rows) ex__cat(t, "]");
  ex__cat(t, "%s)", k == EX__I32 ? ", dtype=torch.int32" : "");
}

/* ex_tensor_f32 - print(tensor) of a 1-D float32 tensor: "tensor([1., 2.])" */
static inline const char *ex_tensor_f32(ex_text *t, const float *v, size_t n) {
  ex__clear(t);
  ex__torch(t, v, EX__F32, 0, n);
  return t->s;
}

/* ex_tensor2_f32 - a rows x cols float32 tensor: "tensor([[0., 0.], [1., 1.]])" */
static inline const char *ex_tensor2_f32(ex_text *t, const float *v, size_t rows,
                                         size_t cols) {
  ex__clear(t);
  ex__torch(t, v, EX__F32, rows, cols);
  return t->s;
}

/* ex_tensor_i64 - an int64 tensor (torch's default integer type): "tensor([10])" */
static inline const char *ex_tensor_i64(ex_text *t, const int64_t *v, size_t n) {
  ex__clear(t);
  ex__torch(t, v, EX__I64, 0, n);
  return t->s;
}

/* ex_tensor_i32 - "tensor([0, 1], dtype=torch.int32)" */
static inline const char *ex_tensor_i32(ex_text *t, const int32_t *v, size_t n) {
  ex__clear(t);
  ex__torch(t, v, EX__I32, 0, n);
  return t->s;
}

/* torch's repr of a Python list of `count` 1-D tensors of n elements each,
 * stored one after another from v (elements of `esize` bytes). */
static inline const char *ex__torch_list(ex_text *t, const void *v, ex__kind k,
                                         size_t esize, size_t count, size_t n) {
  size_t i;
  ex__clear(t);
  ex__cat(t, "[");
  for (i = 0; i < count; i++) {
    if (i) ex__cat(t, ", ");
    ex__torch(t, (const char *)v + i * n * esize, k, 0, n);
  }
  ex__cat(t, "]");
  return t->s;
}

/* ex_tensor_list_f32, ex_tensor_list_i64 - print(list) of `count` 1-D tensors
 *   of n elements each, stored one after another in v:
 *   "[tensor([1.]), tensor([2.])]". Each tensor is padded on its own. */
static inline const char *ex_tensor_list_f32(ex_text *t, const float *v,
                                             size_t count, size_t n) {
  return ex__torch_list(t, v, EX__F32, sizeof *v, count, n);
}

static inline const char *ex_tensor_list_i64(ex_text *t, const int64_t *v,
                                             size_t count, size_t n) {
  return ex__torch_list(t, v, EX__I64, sizeof *v, count, n);
}

/* --- numpy: float32 arrays in numpy's default positional format --- */

/* The shortest fixed-point digits that read back as the same float32, at
 * most 8 after the point (numpy's precision), "10." for whole numbers. */
static inline void ex__np_elem(char *s, size_t cap, float x) {
  int p;
  size_t len;
  if (isnan(x)) { snprintf(s, cap, "nan"); return; }
  if (isinf(x)) { snprintf(s, cap, x < 0 ? "-inf" : "inf"); return; }
  for (p = 0; p < 8; p++) {
    snprintf(s, cap, "%.*f", p, (double)x);
    if ((float)strtod(s, NULL) == x) break;
  }
  if (p == 8) snprintf(s, cap, "%.8f", (double)x);
  len = strlen(s);
  if (p == 0) {
    if (len + 1 < cap) { s[len] = '.'; s[len + 1] = 0; }
  } else {
    while (len > 0 && s[len - 1] == '0') s[--len] = 0;
  }
}

/* numpy's str() of a 1-D (rows == 0) or 2-D float32 array, appended to t. */
static inline void ex__numpy(ex_text *t, const float *v, size_t rows, size_t cols) {
  char s[64];
  size_t i, r, j, nrows = rows ? rows : 1, n = nrows * cols;
  int left = 0, right = 0;
  for (i = 0; i < n; i++) {
    const char *dot;
    int l, rt;
    ex__np_elem(s, sizeof s, v[i]);
    dot = strchr(s, '.');
    l = dot ? (int)(dot - s) : (int)strlen(s);
    rt = dot ? (int)strlen(dot + 1) : 0;
    if (l > left) left = l;
    if (rt > right) right = rt;
  }
  if (rows) ex__cat(t, "[");
  for (r = 0; r < nrows; r++) {
    ex__cat(t, r ? " [" : "[");
    for (j = 0; j < cols; j++) {
      const char *dot;
      int l, rt;
      ex__np_elem(s, sizeof s, v[r * cols + j]);
      dot = strchr(s, '.');
      l = dot ? (int)(dot - s) : (int)strlen(s);
      rt = dot ? (int)strlen(dot + 1) : 0;
      ex__cat(t, "%s%*s%s%*s", j ? " " : "", left - l, "", s, right - rt, "");
    }
    ex__cat(t, "]");
  }
  if (rows) ex__cat(t, "]");
}

/* ex_numpy_f32 - print(tensor.numpy()) of a 1-D float32 tensor: "[0. 0. 0.]" */
static inline const char *ex_numpy_f32(ex_text *t, const float *v, size_t n) {
  ex__clear(t);
  ex__numpy(t, v, 0, n);
  return t->s;
}

/* ex_numpy2_f32 - of a rows x cols one: "[[ 0.  1. 10. 11.] [ 0.  1. 10. 11.]]" */
static inline const char *ex_numpy2_f32(ex_text *t, const float *v, size_t rows,
                                        size_t cols) {
  ex__clear(t);
  ex__numpy(t, v, rows, cols);
  return t->s;
}

/* --- Python lists: tensor.tolist() --- */

/* Python's repr of a float: the shortest digits that read back the same
 * double, with ".0" on whole numbers ("6.0"). */
static inline void ex__py_float(char *s, size_t cap, double x) {
  int p;
  if (isnan(x)) { snprintf(s, cap, "nan"); return; }
  if (isinf(x)) { snprintf(s, cap, x < 0 ? "-inf" : "inf"); return; }
  if (x == floor(x) && fabs(x) < 1e16) { snprintf(s, cap, "%.1f", x); return; }
  for (p = 1; p < 17; p++) {
    snprintf(s, cap, "%.*g", p, x);
    if (strtod(s, NULL) == x) break;
  }
  if (p == 17) snprintf(s, cap, "%.17g", x);
}

/* ex_tolist2_f32 - print(tensor.tolist()) of a rows x cols float32 tensor:
 *   "[[6.0, 6.0, 6.0]]" */
static inline const char *ex_tolist2_f32(ex_text *t, const float *v, size_t rows,
                                         size_t cols) {
  char s[64];
  size_t r, j;
  ex__clear(t);
  ex__cat(t, "[");
  for (r = 0; r < rows; r++) {
    ex__cat(t, r ? ", [" : "[");
    for (j = 0; j < cols; j++) {
      ex__py_float(s, sizeof s, (double)v[r * cols + j]);
      ex__cat(t, "%s%s", j ? ", " : "", s);
    }
    ex__cat(t, "]");
  }
  ex__cat(t, "]");
  return t->s;
}

#endif /* EXAMPLE_UTIL_H_INCLUDED */
