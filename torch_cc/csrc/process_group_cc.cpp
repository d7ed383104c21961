// torch_cc: cc (the single-header collective library, ../../cc.h) as a
// torch.distributed backend. One translation unit: it holds cc's
// implementation (CC_IMPLEMENTATION, every cc function static to this file)
// and the c10d ProcessGroup subclass, exposed to Python as torch_cc._C.
//
// How a call runs (docs/torch.md, "How it works"):
//   * every torch call makes an Op (what to call in cc, what to copy back) and
//     returns a CCWork for it. The op is first *deferred*: if the caller waits
//     on the work at once (what every call with async_op=False does), wait()
//     runs the op as a blocking cc call on the caller's thread, the fastest path
//     cc has (no thread hand-off).
//   * otherwise the op is issued as a cc request (cc_group_begin, the call,
//     cc_group_end(c, &req)), run by cc's worker thread in issue order: when the
//     next op arrives, when the work is polled (is_completed) or asked for its
//     future, or when it has stayed deferred for CC_TORCH_DEFER_US (default
//     1000 µs; 0 issues every op as a request at once) - so an op that nobody
//     waits for still starts, and an async op never waits on the caller.
//   * futures (DDP's reducer uses them) are completed by a completion thread
//     that waits on the requests in order.
// Bootstrap: rank 0 of the group calls cc_get_unique_id and puts the id in the
// group's Store; the others read it; every rank calls cc_comm_init_rank.

#define CC_STATIC
#define CC_IMPLEMENTATION
// g++ 12 -O2 sees a false "may be used uninitialized" in cc.h's
// cc_op_create_premul_sum once inlined here (the slot is set on every path
// that reaches its use).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "cc.h"
#pragma GCC diagnostic pop

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>
#include <pybind11/chrono.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

// What the torch being built against offers a backend. torch 1.x: a
// c10d::ProcessGroup; 2.x: a c10d::Backend; the coalesced tensor ops from 2.1;
// the newer interface (splitting, coalescing, options, abort/shutdown,
// getError) is compiled for torch >= 2.13, the torch 2 this was built and
// tested against (the signatures moved between 2.1 and 2.13).
#define TORCH_CC_AT_LEAST(a, b) (TORCH_VERSION_MAJOR > (a) || (TORCH_VERSION_MAJOR == (a) && TORCH_VERSION_MINOR >= (b)))
#define TORCH_CC_COALESCED_TENSORS TORCH_CC_AT_LEAST(2, 1)
#define TORCH_CC_BACKEND_2_13 TORCH_CC_AT_LEAST(2, 13)

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace torch_cc {

// torch 1.x: a backend is a c10d::ProcessGroup; torch 2.x: a c10d::Backend
// that torch wraps in a ProcessGroup itself.
#if TORCH_VERSION_MAJOR >= 2
using CCBase = c10d::Backend;
#else
using CCBase = c10d::ProcessGroup;
#endif

using Clock = std::chrono::steady_clock;

static uint64_t now_ns() {
  return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// ------------------------------------------------------------------ dtypes and ops

static bool map_dtype(at::ScalarType s, cc_dtype *out) {
  switch (s) {
  case at::kChar: *out = CC_INT8; return true;
  case at::kByte: *out = CC_UINT8; return true;
  case at::kBool: *out = CC_UINT8; return true;
  case at::kInt: *out = CC_INT32; return true;
  case at::kLong: *out = CC_INT64; return true;
  case at::kHalf: *out = CC_FLOAT16; return true;
  case at::kBFloat16: *out = CC_BFLOAT16; return true;
  case at::kFloat: *out = CC_FLOAT32; return true;
  case at::kDouble: *out = CC_FLOAT64; return true;
  case at::kComplexFloat: *out = CC_COMPLEX64; return true;
  case at::kComplexDouble: *out = CC_COMPLEX128; return true;
  default: return false;
  }
}

static std::string dtype_name(at::ScalarType s) {
  switch (s) {
  case at::kChar: return "torch.int8";
  case at::kByte: return "torch.uint8";
  case at::kShort: return "torch.int16";
  case at::kInt: return "torch.int32";
  case at::kLong: return "torch.int64";
  case at::kHalf: return "torch.float16";
  case at::kBFloat16: return "torch.bfloat16";
  case at::kFloat: return "torch.float32";
  case at::kDouble: return "torch.float64";
  case at::kComplexHalf: return "torch.complex32";
  case at::kComplexFloat: return "torch.complex64";
  case at::kComplexDouble: return "torch.complex128";
  case at::kBool: return "torch.bool";
  default: return std::string("torch.") + c10::toString(s);
  }
}

// How a tensor's bytes travel in an op that only moves data: as its own cc
// dtype, or as bytes when cc has no such dtype (int16, complex32 ...).
struct Kind {
  cc_dtype t;
  size_t mult;  // cc elements per torch element
};

static Kind move_kind(at::ScalarType s) {
  cc_dtype t;
  if (map_dtype(s, &t)) return {t, 1};
  return {CC_UINT8, (size_t)c10::elementSize(s)};
}

static cc_dtype reduce_dtype(at::ScalarType s, const char *what) {
  cc_dtype t;
  TORCH_CHECK(map_dtype(s, &t), "backend cc: ", what, ": dtype ", dtype_name(s),
              " cannot be reduced by cc (it reduces int8, uint8, int32, int64, float16, bfloat16, float32, "
              "float64, complex64, complex128, and bool as uint8); ops that only move data take any dtype");
  return t;
}

static const char *op_name(c10d::ReduceOp::RedOpType o) {
  switch (o) {
  case c10d::ReduceOp::SUM: return "SUM";
  case c10d::ReduceOp::AVG: return "AVG";
  case c10d::ReduceOp::PRODUCT: return "PRODUCT";
  case c10d::ReduceOp::MIN: return "MIN";
  case c10d::ReduceOp::MAX: return "MAX";
  case c10d::ReduceOp::BAND: return "BAND";
  case c10d::ReduceOp::BOR: return "BOR";
  case c10d::ReduceOp::BXOR: return "BXOR";
  case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
  default: return "UNUSED";
  }
}

// PREMUL_SUM's tensor factor: torch 1.13 keeps a list of them
// (`tensor_factors`, one per device), torch 2 one (`tensor_factor`). Undefined
// when the factor is a double.
template <class S>
static auto premul_factor_of(const S &s, int) -> decltype(s.tensor_factors, at::Tensor()) {
  return s.tensor_factors.empty() ? at::Tensor() : s.tensor_factors[0];
}
template <class S>
static auto premul_factor_of(const S &s, long) -> decltype(s.tensor_factor, at::Tensor()) {
  return s.tensor_factor;
}
static at::Tensor premul_factor(const c10d::NCCLPreMulSumSupplement &s) { return premul_factor_of(s, 0); }

// ------------------------------------------------------------------ one operation

// What one torch call does in cc: `issue` makes the cc call(s) (blocking, or
// queued in an open group), `finish` copies results where torch wants them
// after success. `keep` holds every tensor the cc calls touch until the op is
// over; `outputs` are the user's result tensors (Work::result, the future).
struct Op {
  const char *name = "";
  std::function<cc_result(cc_comm *)> issue;
  std::function<void()> finish;
  std::vector<at::Tensor> keep;
  std::vector<at::Tensor> outputs;
  std::shared_ptr<int> source;  // a receive from any source: cc_recv_any writes the sender here
};

class CCComm;
class CCWork;

static std::string failure_text(const char *what, int rank, cc_result r, const std::string &detail) {
  std::ostringstream o;
  o << "backend cc: " << what << " failed on rank " << rank << ": "
    << (detail.empty() ? std::string("(no detail)") : detail) << " [" << cc_strerror(r) << "]";
  return o.str();
}

// One cc request, shared by the works of one batch (batch_isend_irecv).
// Exactly one thread calls cc_wait (which frees it): the first to claim it.
struct Req {
  std::shared_ptr<CCComm> comm;
  cc_request *r = nullptr;
  std::mutex m;
  std::condition_variable cv;
  bool claimed = false, done = false;
  cc_result result = CC_OK;
  std::string msg;

  Req(std::shared_ptr<CCComm> c, cc_request *q) : comm(std::move(c)), r(q) {}
  ~Req();
  void wait();   // until done
  bool test();   // never blocks; true when done
 private:
  void reap(std::unique_lock<std::mutex> &l);  // claimed by this thread: cc_wait and record
};

// The communicator of one process group and the machinery around it.
class CCComm : public std::enable_shared_from_this<CCComm> {
 public:
  cc_comm *c = nullptr;
  int rank = 0, size = 1;
  std::mutex mu;                       // held for every cc call that issues work
  c10::intrusive_ptr<CCWork> deferred; // at most one op not yet issued
  std::atomic<bool> has_deferred{false};
  uint64_t deferred_ns = 0;
  bool coalescing = false;             // a cc group is open (batch_isend_irecv)
  std::vector<c10::intrusive_ptr<CCWork>> batch, batch_futures;
  int premul_op = -1;                  // the last PREMUL_SUM op (destroyed before the next one)
  uint64_t defer_ns = 1000000;

  explicit CCComm(cc_comm *comm) : c(comm), rank(cc_comm_rank(comm)), size(cc_comm_size(comm)) {}
  ~CCComm() { shutdown(); }

  void start(uint64_t defer_us);
  void shutdown();
  std::string last_error();
  bool alive() { std::lock_guard<std::mutex> l(errmu_); return alive_; }
  // the first failure of an op on this communicator (CC_OK: none); a
  // caller's bad argument is not one
  void note_failure(cc_result r) {
    if (r == CC_OK || r == CC_ERR_INVALID_ARG) return;
    cc_result none = CC_OK;
    failure.compare_exchange_strong(none, r);
  }
  std::atomic<cc_result> failure{CC_OK};

  // with mu held
  void flush_locked();
  void defer_locked(const c10::intrusive_ptr<CCWork> &w);
  cc_op premul_locked(cc_dtype t, const void *scalar, const char *what);

  void watch(const c10::intrusive_ptr<CCWork> &w);  // complete it (and its future) in the background
  void orphan(cc_request *r);                       // a request nobody will wait for

 private:
  void flusher_main();
  void completer_main();

  std::mutex errmu_;
  bool alive_ = true;
  // flusher
  std::thread flusher_;
  std::mutex fmu_;
  std::condition_variable fcv_;
  std::atomic<bool> fsleeping_{false};
  bool fstop_ = false;
 public:
  std::atomic<uint64_t> nops{0};
 private:
  // completer
  std::thread completer_;
  std::mutex qmu_;
  std::condition_variable qcv_;
  std::deque<c10::intrusive_ptr<CCWork>> q_;
  std::deque<cc_request *> orphans_;
  bool qstop_ = false, started_ = false, down_ = false;
};

class CCWork : public c10d::Work {
 public:
  enum State { DEFERRED = 0, IN_GROUP = 1, ISSUED = 2, RUNNING = 3 };

  CCWork(std::shared_ptr<CCComm> comm, std::unique_ptr<Op> op, c10d::OpType type, int src)
      : c10d::Work(comm->rank, type), comm_(std::move(comm)), op_(std::move(op)), src_(src) {
    outputs_ = op_->outputs;
    name_ = op_->name;
    any_src_ = op_->source;
  }
  ~CCWork() override = default;

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  int sourceRank() const override {
    if (any_src_) {
      int s = __atomic_load_n(any_src_.get(), __ATOMIC_ACQUIRE);
      TORCH_CHECK(s >= 0, "backend cc: recv from any source: the sender is known once the receive has completed "
                          "(wait() first; a failed receive has none)");
      return s;
    }
    TORCH_CHECK(src_ >= 0, "backend cc: sourceRank() is for receives only");
    return src_;
  }
  void abort() override {
    if (comm_->alive()) cc_comm_abort(comm_->c);
  }

  // internal, with comm_->mu held
  void issue_async_locked();
  void run_blocking_locked(std::unique_lock<std::mutex> &l);
  void attach_locked(std::shared_ptr<Req> r) {
    req_ = std::move(r);
    state_.store(ISSUED, std::memory_order_release);
  }
  void complete(cc_result r, const std::string &msg);
  void wait_req_and_complete();
  bool is_done() {
    std::lock_guard<std::mutex> l(mutex_);
    return completed_;
  }
  void fail_now(const std::string &msg) {
    complete_with(std::make_exception_ptr(std::runtime_error(msg)));
  }

  std::shared_ptr<CCComm> comm_;
  std::unique_ptr<Op> op_;
  std::vector<at::Tensor> outputs_;
  const char *name_;
  int src_;
  std::shared_ptr<int> any_src_;
  std::atomic<int> state_{DEFERRED};
  std::shared_ptr<Req> req_;

 private:
  void complete_with(std::exception_ptr ex);
  static void mark(const c10::intrusive_ptr<c10::ivalue::Future> &f, const std::vector<at::Tensor> &out,
                   std::exception_ptr ex) {
    if (ex) f->setError(ex);
    else f->markCompleted(c10::IValue(out));
  }

  std::mutex finish_mu_;
  bool finished_ = false;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool future_marked_ = false;
};

// ------------------------------------------------------------------ Req

void Req::reap(std::unique_lock<std::mutex> &l) {
  claimed = true;
  l.unlock();
  cc_result res = cc_wait(r);
  std::string m = res == CC_OK ? std::string() : comm->last_error();
  l.lock();
  r = nullptr;
  result = res;
  msg = m;
  done = true;
  cv.notify_all();
}

void Req::wait() {
  std::unique_lock<std::mutex> l(m);
  if (done) return;
  if (!claimed) {
    reap(l);
    return;
  }
  cv.wait(l, [&] { return done; });
}

bool Req::test() {
  std::unique_lock<std::mutex> l(m);
  if (done) return true;
  if (claimed) return false;
  int d = 0;
  cc_test(r, &d);
  if (!d) return false;
  reap(l);  // finished: cc_wait returns at once
  return true;
}

Req::~Req() {
  if (r && !claimed) {
    int d = 0;
    cc_test(r, &d);
    if (d) cc_wait(r);
    else comm->orphan(r);
  }
}

// ------------------------------------------------------------------ CCComm

std::string CCComm::last_error() {
  std::lock_guard<std::mutex> l(errmu_);
  if (!alive_) return "the process group was destroyed before this operation was waited for";
  return cc_comm_last_error(c);
}

void CCComm::start(uint64_t defer_us) {
  defer_ns = defer_us * 1000;
  started_ = true;
  completer_ = std::thread([this] { completer_main(); });
  if (defer_ns) flusher_ = std::thread([this] { flusher_main(); });
}

void CCComm::shutdown() {
  if (down_) return;
  down_ = true;
  {
    std::lock_guard<std::mutex> l(mu);
    flush_locked();
    if (coalescing) {  // a batch left open: run what it holds, then forget it
      cc_request *req = nullptr;
      cc_result r = cc_group_end(c, &req);
      coalescing = false;
      auto rq = std::make_shared<Req>(shared_from_this(), r == CC_OK ? req : nullptr);
      for (auto &w : batch) w->attach_locked(rq);
      batch.clear();
    }
  }
  if (started_) {
    {
      std::lock_guard<std::mutex> l(fmu_);
      fstop_ = true;
      fsleeping_ = false;
    }
    fcv_.notify_all();
    {
      std::lock_guard<std::mutex> l(qmu_);
      qstop_ = true;
    }
    qcv_.notify_all();
    for (std::thread *t : {&flusher_, &completer_}) {
      if (!t->joinable()) continue;
      if (t->get_id() == std::this_thread::get_id()) t->detach();
      else t->join();
    }
  }
  cc_comm *cc;
  {
    std::lock_guard<std::mutex> l(errmu_);
    alive_ = false;
    cc = c;
  }
  if (cc) cc_comm_destroy(cc);  // finishes what is still queued
  std::deque<cc_request *> left;
  {
    std::lock_guard<std::mutex> l(qmu_);
    left.swap(orphans_);
  }
  for (cc_request *r : left) cc_wait(r);  // all finished now: this only frees them
}

void CCComm::flush_locked() {
  if (!deferred) return;
  c10::intrusive_ptr<CCWork> w = std::move(deferred);
  deferred.reset();
  has_deferred.store(false);
  w->issue_async_locked();
}

void CCComm::defer_locked(const c10::intrusive_ptr<CCWork> &w) {
  deferred = w;
  deferred_ns = now_ns();
  has_deferred.store(true);
  nops.fetch_add(1, std::memory_order_relaxed);
  if (fsleeping_.load()) {
    {
      std::lock_guard<std::mutex> l(fmu_);
      fsleeping_ = false;
    }
    fcv_.notify_one();
  }
}

cc_op CCComm::premul_locked(cc_dtype t, const void *scalar, const char *what) {
  // The previous premul op is destroyed first (cc_op_destroy waits for the
  // queued requests, so no one still uses it); the new one then takes the same
  // slot on every rank, as cc requires of ops that ranks use together.
  if (premul_op >= 0) {
    cc_op_destroy(c, premul_op);
    premul_op = -1;
  }
  cc_op op = -1;
  cc_result r = cc_op_create_premul_sum(c, t, scalar, &op);
  TORCH_CHECK(r == CC_OK, failure_text(what, rank, r, cc_comm_last_error(c)));
  premul_op = op;
  return op;
}

void CCComm::watch(const c10::intrusive_ptr<CCWork> &w) {
  {
    std::lock_guard<std::mutex> l(qmu_);
    q_.push_back(w);
  }
  qcv_.notify_one();
}

void CCComm::orphan(cc_request *r) {
  {
    std::lock_guard<std::mutex> l(qmu_);
    orphans_.push_back(r);
  }
  qcv_.notify_one();
}

void CCComm::completer_main() {
  std::unique_lock<std::mutex> l(qmu_);
  for (;;) {
    qcv_.wait(l, [&] { return qstop_ || !q_.empty() || !orphans_.empty(); });
    if (!orphans_.empty()) {
      cc_request *r = orphans_.front();
      orphans_.pop_front();
      l.unlock();
      cc_wait(r);
      l.lock();
      continue;
    }
    if (!q_.empty()) {
      c10::intrusive_ptr<CCWork> w = std::move(q_.front());
      q_.pop_front();
      l.unlock();
      w->wait_req_and_complete();
      w.reset();
      l.lock();
      continue;
    }
    if (qstop_) break;
  }
}

// Issues an op that stayed deferred for defer_ns: an async op nobody polls or
// waits for still starts. Ticks every defer_ns while ops come; sleeps when
// none came for 50 ms, until the next one.
void CCComm::flusher_main() {
  std::unique_lock<std::mutex> fl(fmu_);
  uint64_t seen = nops.load(), idle_since = now_ns();
  auto tick = std::chrono::nanoseconds(defer_ns);
  while (!fstop_) {
    fcv_.wait_for(fl, tick, [&] { return fstop_; });
    if (fstop_) break;
    fl.unlock();
    {
      std::unique_lock<std::mutex> l(mu, std::try_to_lock);
      if (l.owns_lock() && deferred && now_ns() - deferred_ns >= defer_ns) flush_locked();
    }
    fl.lock();
    uint64_t n = nops.load();
    if (n != seen) {
      seen = n;
      idle_since = now_ns();
    } else if (now_ns() - idle_since > 50000000ull) {
      fsleeping_.store(true);
      if (has_deferred.load()) {
        fsleeping_.store(false);
        continue;
      }
      fcv_.wait(fl, [&] { return fstop_ || !fsleeping_.load(); });
      seen = nops.load();
      idle_since = now_ns();
    }
  }
}

// ------------------------------------------------------------------ CCWork

void CCWork::issue_async_locked() {
  cc_comm *c = comm_->c;
  if (comm_->coalescing) {
    cc_result r = op_->issue(c);  // queued in the open group
    if (r != CC_OK) {
      state_.store(RUNNING);
      complete(r, cc_comm_last_error(c));
      return;
    }
    state_.store(IN_GROUP);
    comm_->batch.push_back(c10::intrusive_ptr<CCWork>::reclaim_copy(this));
    return;
  }
  cc_group_begin(c);
  cc_result r = op_->issue(c);
  std::string msg = r == CC_OK ? std::string() : std::string(cc_comm_last_error(c));
  cc_request *req = nullptr;
  cc_result e = cc_group_end(c, &req);
  if (r != CC_OK) {  // refused before anything ran (bad arguments)
    if (req) cc_wait(req);
    state_.store(RUNNING);
    complete(r, msg);
    return;
  }
  if (e != CC_OK) {
    state_.store(RUNNING);
    complete(e, cc_comm_last_error(c));
    return;
  }
  attach_locked(std::make_shared<Req>(comm_, req));
}

void CCWork::run_blocking_locked(std::unique_lock<std::mutex> &l) {
  state_.store(RUNNING);
  cc_result r = op_->issue(comm_->c);
  std::string msg = r == CC_OK ? std::string() : std::string(cc_comm_last_error(comm_->c));
  l.unlock();
  complete(r, msg);
}

void CCWork::complete(cc_result r, const std::string &msg) {
  std::exception_ptr ex;
  comm_->note_failure(r);
  if (r != CC_OK) ex = std::make_exception_ptr(std::runtime_error(failure_text(name_, comm_->rank, r, msg)));
  complete_with(ex);
}

void CCWork::complete_with(std::exception_ptr ex) {
  c10::intrusive_ptr<c10::ivalue::Future> fut;
  {
    std::lock_guard<std::mutex> fl(finish_mu_);
    if (finished_) return;
    if (!ex && op_ && op_->finish) {
      try {
        op_->finish();
      } catch (...) {
        ex = std::current_exception();
      }
    }
    op_.reset();  // temporaries go now
    finished_ = true;
    {
      std::lock_guard<std::mutex> l(mutex_);
      completed_ = true;
      exception_ = ex;
      if (future_ && !future_marked_) {
        future_marked_ = true;
        fut = future_;
      }
    }
    cv_.notify_all();
  }
  if (fut) mark(fut, outputs_, ex);  // callbacks run here: no lock held
}

void CCWork::wait_req_and_complete() {
  if (state_.load(std::memory_order_acquire) == ISSUED) {
    req_->wait();
    complete(req_->result, req_->msg);
  }
  std::unique_lock<std::mutex> l(mutex_);
  cv_.wait(l, [&] { return completed_; });
}

bool CCWork::isCompleted() {
  if (is_done()) return true;
  int s = state_.load(std::memory_order_acquire);
  if (s == DEFERRED) {
    std::unique_lock<std::mutex> l(comm_->mu, std::try_to_lock);
    if (l.owns_lock() && state_.load() == DEFERRED && comm_->deferred.get() == this) comm_->flush_locked();
    return is_done();
  }
  if (s == ISSUED && req_->test()) {
    complete(req_->result, req_->msg);
    return true;
  }
  return is_done();
}

bool CCWork::wait(std::chrono::milliseconds timeout) {
  if (state_.load(std::memory_order_acquire) == DEFERRED) {
    std::unique_lock<std::mutex> l(comm_->mu);
    if (state_.load() == DEFERRED) {
      if (timeout != kNoTimeout) {
        comm_->flush_locked();  // a wait with a time limit polls a request
      } else {
        if (comm_->deferred.get() == this) {
          comm_->deferred.reset();
          comm_->has_deferred.store(false);
        }
        run_blocking_locked(l);
      }
    }
  }
  int s = state_.load(std::memory_order_acquire);
  TORCH_CHECK(s != IN_GROUP, "backend cc: wait() on an operation of a batch (batch_isend_irecv) before the batch ended");
  if (s == ISSUED && !is_done()) {
    if (timeout == kNoTimeout) {
      req_->wait();
    } else {
      auto deadline = Clock::now() + timeout;
      while (!req_->test()) {
        if (Clock::now() >= deadline)
          throw std::runtime_error(c10::str("backend cc: ", name_, " on rank ", comm_->rank, ": wait timed out after ",
                                            timeout.count(), " ms (the operation goes on)"));
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    complete(req_->result, req_->msg);
  }
  std::unique_lock<std::mutex> l(mutex_);
  cv_.wait(l, [&] { return completed_; });
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> CCWork::getFuture() {
  c10::intrusive_ptr<c10::ivalue::Future> fut;
  bool mark_now = false;
  std::exception_ptr ex;
  {
    std::lock_guard<std::mutex> l(mutex_);
    if (!future_) future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    fut = future_;
    if (completed_ && !future_marked_) {
      future_marked_ = mark_now = true;
      ex = exception_;
    }
  }
  if (mark_now) {
    mark(fut, outputs_, ex);
    return fut;
  }
  {
    std::lock_guard<std::mutex> l(comm_->mu);
    int s = state_.load();
    if (s == DEFERRED && comm_->deferred.get() == this) comm_->flush_locked();
    s = state_.load();
    if (s == IN_GROUP) {
      comm_->batch_futures.push_back(c10::intrusive_ptr<CCWork>::reclaim_copy(this));
      return fut;
    }
  }
  if (state_.load() == ISSUED) comm_->watch(c10::intrusive_ptr<CCWork>::reclaim_copy(this));
  // RUNNING: the thread running it completes the future.
  return fut;
}

// ------------------------------------------------------------------ tensors

static void check_tensor(const at::Tensor &t, const char *what) {
  TORCH_CHECK(t.defined(), "backend cc: ", what, ": undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), "backend cc: ", what, ": the tensor is on ", t.device().str(),
              ": this build of torch_cc handles CPU tensors only (CUDA support through cc_cuda.cuh can follow); "
              "use backend \"nccl\" or \"gloo\" for CUDA tensors");
  TORCH_CHECK(t.layout() == c10::kStrided, "backend cc: ", what, ": sparse tensors are not supported");
}

static at::Tensor contig(const at::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }

static void *ptr(const at::Tensor &t) { return t.numel() ? t.data_ptr() : nullptr; }

// A tensor the op writes (and maybe reads): cc works on `buf`, contiguous;
// finish() copies it back when `user` is not contiguous.
struct Slot {
  at::Tensor user, buf;
  bool back = false;
};

static Slot slot(const at::Tensor &t, bool read) {
  Slot s;
  s.user = t;
  if (t.is_contiguous()) s.buf = t;
  else {
    s.buf = read ? t.contiguous() : at::empty(t.sizes(), t.options());
    s.back = true;
  }
  return s;
}

// The tensors of `list`, all of `n` elements and `dtype`, as one contiguous
// buffer: the list's own memory when its tensors lie back to back in order
// (as chunks of one tensor do), else a new buffer (filled from the list when
// `fill`). Returns whether it is a copy.
static bool flat_of(const std::vector<at::Tensor> &list, int64_t n, const at::Tensor &like, bool fill,
                    at::Tensor *out) {
  bool adjacent = true;
  size_t nb = (size_t)n * like.element_size();
  for (size_t i = 0; i < list.size() && adjacent; i++) {
    if (!list[i].is_contiguous() ||
        (char *)list[i].data_ptr() != (char *)list[0].data_ptr() + i * nb)
      adjacent = false;
  }
  if (adjacent && n > 0 && !list.empty()) {
    *out = at::from_blob(list[0].data_ptr(), {(int64_t)list.size() * n}, like.options());
    return false;
  }
  if (fill) {
    std::vector<at::Tensor> flat;
    for (auto &t : list) flat.push_back(t.reshape({-1}));
    *out = list.empty() ? at::empty({0}, like.options()) : at::cat(flat);
  } else {
    *out = at::empty({(int64_t)list.size() * n}, like.options());
  }
  return true;
}

static void check_same(const std::vector<at::Tensor> &list, const at::Tensor &like, const char *what) {
  for (auto &t : list) {
    check_tensor(t, what);
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "backend cc: ", what, ": tensors of different dtypes (",
                dtype_name(t.scalar_type()), " and ", dtype_name(like.scalar_type()), ")");
    TORCH_CHECK(t.numel() == like.numel(), "backend cc: ", what, ": tensors of different sizes (", t.numel(),
                " and ", like.numel(), " elements)");
  }
}

// ------------------------------------------------------------------ the process group

class ProcessGroupCC : public CCBase {
 public:
  ProcessGroupCC(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                 std::chrono::milliseconds timeout, std::string group_id = "",
                 std::vector<int64_t> global_ranks = {})
      : CCBase(rank, size), store_(store), timeout_(timeout), group_id_(std::move(group_id)),
        global_ranks_(std::move(global_ranks)) {
    cc_unique_id id;
    const std::string key = "cc_unique_id";
    if (rank == 0) {
      cc_result r = cc_get_unique_id(&id);
      TORCH_CHECK(r == CC_OK, failure_text("init (cc_get_unique_id)", rank, r, cc_comm_last_error(nullptr)));
      store->set(key, std::vector<uint8_t>((uint8_t *)&id, (uint8_t *)&id + sizeof id));
    } else {
      std::vector<uint8_t> v = store->get(key);
      TORCH_CHECK(v.size() == sizeof id, "backend cc: init: the store's ", key, " holds ", v.size(),
                  " bytes, not a cc_unique_id (", sizeof id, " bytes): another job's store?");
      std::memcpy(&id, v.data(), sizeof id);
    }
    cc_config cfg;
    cc_config_init(&cfg);
    // CC_TIMEOUT, when set, wins; else the timeout torch was given.
    const char *env = getenv("CC_TIMEOUT");
    if (!(env && *env) && timeout.count() > 0)
      cfg.timeout_ms = timeout.count() > INT32_MAX ? INT32_MAX : (int)timeout.count();
    cc_comm *c = nullptr;
    cc_result r = cc_comm_init_rank(&c, size, &id, rank, &cfg);
    TORCH_CHECK(r == CC_OK, failure_text("init (cc_comm_init_rank)", rank, r, cc_comm_last_error(nullptr)));
    if (rank == 0) {
      try {
        store->deleteKey(key);  // every rank has joined: the id is spent
      } catch (...) {
      }
    }
    start(c);
  }

  // A communicator that cc_comm_split made of this one's (split()); its
  // timeout is the parent's (cc_comm_split keeps it).
  ProcessGroupCC(const c10::intrusive_ptr<c10d::Store> &store, cc_comm *c, std::chrono::milliseconds timeout,
                 std::string group_id)
      : CCBase(cc_comm_rank(c), cc_comm_size(c)), store_(store), timeout_(timeout), group_id_(std::move(group_id)),
        together_(false) {
    start(c);
  }

  ~ProcessGroupCC() override { close(); }

  // Leaves together (leave_together), then the communicator goes: once, from
  // shutdown() or the destructor. Python drops the group with the GIL held;
  // shutdown waits for the completion thread, which may be running a
  // future's Python callback.
  void close() {
    if (!comm_ || closed_.exchange(true)) return;
    if (Py_IsInitialized() && PyGILState_Check()) {
      pybind11::gil_scoped_release nogil;
      leave_together();
      comm_->shutdown();
    } else {
      leave_together();
      comm_->shutdown();
    }
  }

  // With env:// rank 0 hosts torch's store, and torch 1.13's
  // init_process_group ends in a barrier that polls the store every 10 ms. A
  // rank 0 that is done first (a send, a broadcast's root: they return once
  // the data is written) and destroys its group would take the store away
  // from a rank still polling it ("Connection reset by peer" there). So every
  // other rank says so when it destroys its group, and rank 0 waits for
  // that, at most 10 s, before its group (and the store it holds) goes.
  void leave_together() {
    if (!together_) return;  // a split group: the group it was split from waits so
    try {
      const std::string pre = "cc_left/";
      if (getRank() != 0) {
        store_->set(pre + std::to_string(getRank()), std::vector<uint8_t>{1});
      } else {
        std::vector<std::string> keys;
        for (int r = 1; r < getSize(); r++) keys.push_back(pre + std::to_string(r));
        if (!keys.empty()) store_->wait(keys, std::chrono::milliseconds(10000));
      }
    } catch (...) {
      // a rank that is gone, or a store that is: nothing to wait for
    }
  }

  const std::string getBackendName() const override { return "cc"; }

  // Every collective counts (as gloo's does); torch's desync debugging and
  // flight recorder read it.
  void setSequenceNumberForGroup() override { seq_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return seq_; }

#if TORCH_CC_BACKEND_2_13
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }  // batch_isend_irecv: one cc group

  c10::intrusive_ptr<Options> getBackendOptions() override {
    auto o = c10::make_intrusive<Options>("cc", timeout_);
    o->group_name = group_id_;
    for (int64_t r : global_ranks_) o->global_ranks_in_group.push_back((uint64_t)r);
    return o;
  }

  // ProcessGroup::splitGroup: every rank of this group calls it, each with
  // the ranks of its new group (a rank in none: a list without it), so it is
  // cc_comm_split on this group's communicator, colour the new group's lowest
  // rank, key the rank's place in it.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
                                          const c10::intrusive_ptr<Options> &opts) override {
    auto me = std::find(ranks.begin(), ranks.end(), getRank());
    int color = CC_UNDEFINED, key = 0;
    if (me != ranks.end()) {
      color = *std::min_element(ranks.begin(), ranks.end());
      key = (int)(me - ranks.begin());
    }
    cc_comm *sub = nullptr;
    {
      std::lock_guard<std::mutex> l(comm_->mu);
      TORCH_CHECK(!comm_->coalescing, "backend cc: split: a batch (coalescing) is open");
      comm_->flush_locked();
      cc_result r = cc_comm_split(comm_->c, color, key, &sub);
      TORCH_CHECK(r == CC_OK, failure_text("split (cc_comm_split)", getRank(), r, cc_comm_last_error(comm_->c)));
    }
    if (!sub) return nullptr;
    return c10::make_intrusive<ProcessGroupCC>(store, sub, opts ? opts->timeout : timeout_,
                                               opts ? opts->group_name : std::string());
  }

  // abort: fail the communicator on every rank now (pending and later calls
  // raise); shutdown: leave as the destructor does (dist.destroy_process_group).
  void abort() override {
    comm_->note_failure(CC_ERR_ABORTED);
    if (comm_->alive()) cc_comm_abort(comm_->c);
  }
  void shutdown() override { close(); }

  c10d::ErrorType getError() override {
    cc_result r = comm_->failure.load();
    if (r == CC_OK) return c10d::ErrorType::SUCCESS;
    return r == CC_ERR_TIMEOUT ? c10d::ErrorType::TIMEOUT : c10d::ErrorType::COMM_ERROR;
  }
#endif

  // ---- collectives

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override {
    const char *w = "broadcast";
    one(tensors, w);
    check_root(opts.rootRank, w);
    TORCH_CHECK(opts.rootTensor == 0, "backend cc: broadcast: rootTensor must be 0 (one tensor per process)");
    auto op = mkop(w);
    Slot s = slot(tensors[0], true);
    Kind k = move_kind(s.buf.scalar_type());
    void *p = ptr(s.buf);
    size_t n = (size_t)s.buf.numel() * k.mult;
    int root = (int)opts.rootRank;
    op->issue = [=](cc_comm *c) { return cc_broadcast(c, p, n, k.t, root); };
    finish_slots(*op, {s});
    op->outputs = tensors;
    return submit(std::move(op), c10d::OpType::BROADCAST);
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    const char *w = "all_reduce";
    one(tensors, w);
    return reduce_like(tensors, opts.reduceOp, w, -1, c10d::OpType::ALLREDUCE);
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                     const c10d::AllreduceCoalescedOptions &opts) override {
    const char *w = "all_reduce_coalesced";
    TORCH_CHECK(!tensors.empty(), "backend cc: ", w, ": no tensors");
    std::unique_lock<std::mutex> l(comm_->mu);
    comm_->flush_locked();
    auto op = mkop(w);
    std::vector<Slot> slots;
    std::vector<std::function<cc_result(cc_comm *)>> calls;
    at::ScalarType st = tensors[0].scalar_type();
    for (auto &t : tensors) {
      check_tensor(t, w);
      TORCH_CHECK(t.scalar_type() == st, "backend cc: ", w, ": tensors of different dtypes (", dtype_name(t.scalar_type()),
                  " and ", dtype_name(st), ")");
    }
    cc_dtype dt = reduce_dtype(st, w);
    cc_op o = resolve_op(opts.reduceOp, st, dt, w);  // once: a PREMUL_SUM op is one cc op
    for (auto &t : tensors) {
      Slot s = slot(t, true);
      void *p = ptr(s.buf);
      size_t n = (size_t)s.buf.numel();
      calls.push_back([=](cc_comm *c) { return cc_all_reduce(c, p, p, n, dt, o); });
      slots.push_back(s);
    }
    op->issue = chain(calls);
    finish_slots(*op, slots);
    op->outputs = tensors;
    return submit_locked(l, std::move(op), c10d::OpType::ALLREDUCE_COALESCED);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override {
    const char *w = "reduce";
    one(tensors, w);
    check_root(opts.rootRank, w);
    TORCH_CHECK(opts.rootTensor == 0, "backend cc: reduce: rootTensor must be 0 (one tensor per process)");
    return reduce_like(tensors, opts.reduceOp, w, (int)opts.rootRank, c10d::OpType::REDUCE);
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &) override {
    const char *w = "all_gather";
    one(inputs, w);
    TORCH_CHECK(outputs.size() == 1, "backend cc: all_gather: one output list per process, got ", outputs.size());
    TORCH_CHECK((int)outputs[0].size() == getSize(), "backend cc: all_gather: the output list has ",
                outputs[0].size(), " tensors for ", getSize(), " ranks");
    const at::Tensor &in = inputs[0];
    check_same(outputs[0], in, w);
    auto op = mkop(w);
    at::Tensor src = contig(in), flat;
    bool copy = flat_of(outputs[0], in.numel(), in, false, &flat);
    Kind k = move_kind(in.scalar_type());
    size_t n = (size_t)in.numel() * k.mult;
    void *sp = ptr(src), *rp = ptr(flat);  // the input as the rank's block of the output: in place for cc
    op->issue = [=](cc_comm *c) { return cc_all_gather(c, sp, rp, n, k.t); };
    op->keep = {src, flat};
    if (copy) {
      auto outs = outputs[0];
      op->finish = [outs, flat]() { scatter_copy(outs, flat); };
    }
    op->outputs = outputs[0];
    return submit(std::move(op), c10d::OpType::ALLGATHER);
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &) override {
    const char *w = "all_gather_into_tensor";
    check_tensor(output, w);
    check_tensor(input, w);
    TORCH_CHECK(output.scalar_type() == input.scalar_type(), "backend cc: ", w, ": output ",
                dtype_name(output.scalar_type()), " and input ", dtype_name(input.scalar_type()), " differ");
    TORCH_CHECK(output.numel() == input.numel() * getSize(), "backend cc: ", w, ": the output has ", output.numel(),
                " elements, not ", getSize(), " x the input's ", input.numel());
    auto op = mkop(w);
    Slot o = slot(output, false);
    at::Tensor src = contig(input);
    Kind k = move_kind(input.scalar_type());
    size_t n = (size_t)input.numel() * k.mult;
    void *sp = ptr(src), *rp = ptr(o.buf);
    op->issue = [=](cc_comm *c) { return cc_all_gather(c, sp, rp, n, k.t); };
    op->keep = {src};
    finish_slots(*op, {o});
    op->outputs = {output};
    return submit(std::move(op), c10d::OpType::_ALLGATHER_BASE);
  }

  // output_tensor_lists[r][i] receives rank r's input i (torch's layout). The
  // inputs travel as one buffer of bytes: one all_gather.
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                                     std::vector<at::Tensor> &inputs,
                                                     const c10d::AllgatherOptions &) override {
    const char *w = "all_gather_coalesced";
    int P = getSize();
    TORCH_CHECK(!inputs.empty(), "backend cc: ", w, ": no input tensors");
    TORCH_CHECK((int)outputs.size() == P, "backend cc: ", w, ": ", outputs.size(), " output lists for ", P,
                " ranks (output_tensor_lists[r][i] receives rank r's input i)");
    std::vector<at::Tensor> bytes;
    std::vector<int64_t> offs;
    int64_t total = 0;
    for (size_t i = 0; i < inputs.size(); i++) {
      check_tensor(inputs[i], w);
      offs.push_back(total);
      at::Tensor b = contig(inputs[i]).reshape({-1});
      bytes.push_back(b.numel() ? b.view(at::kByte) : at::empty({0}, b.options().dtype(at::kByte)));
      total += bytes.back().numel();
    }
    for (int r = 0; r < P; r++) {
      TORCH_CHECK(outputs[r].size() == inputs.size(), "backend cc: ", w, ": output list ", r, " has ",
                  outputs[r].size(), " tensors for ", inputs.size(), " inputs");
      for (size_t i = 0; i < inputs.size(); i++) {
        const at::Tensor &o = outputs[r][i];
        check_tensor(o, w);
        TORCH_CHECK(o.scalar_type() == inputs[i].scalar_type() && o.numel() == inputs[i].numel(), "backend cc: ", w,
                    ": output [", r, "][", i, "] (", dtype_name(o.scalar_type()), ", ", o.numel(),
                    " elements) does not match input ", i, " (", dtype_name(inputs[i].scalar_type()), ", ",
                    inputs[i].numel(), " elements)");
      }
    }
    auto op = mkop(w);
    at::Tensor send = at::cat(bytes), recv = at::empty({total * P}, send.options());
    void *sp = ptr(send), *rp = ptr(recv);
    size_t n = (size_t)total;
    op->issue = [=](cc_comm *c) { return cc_all_gather(c, sp, rp, n, CC_UINT8); };
    op->keep = {send, recv};
    auto outs = outputs;
    op->finish = [outs, recv, offs, total]() {
      for (size_t r = 0; r < outs.size(); r++)
        for (size_t i = 0; i < outs[r].size(); i++) {
          at::Tensor o = outs[r][i];
          int64_t nb = o.numel() * (int64_t)o.element_size();
          if (!nb) continue;
          o.copy_(recv.narrow(0, (int64_t)r * total + offs[i], nb).clone().view(o.scalar_type()).view(o.sizes()));
        }
    };
    for (auto &l : outputs)
      for (auto &t : l) op->outputs.push_back(t);
    return submit(std::move(op), c10d::OpType::ALLGATHER_COALESCED);
  }

#if TORCH_CC_COALESCED_TENSORS
  // Several all_gather_into_tensor in one op (FSDP, _coalescing_manager):
  // outputs[i] receives every rank's inputs[i].
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                 std::vector<at::Tensor> &inputs,
                                                                 const c10d::AllgatherOptions &) override {
    const char *w = "all_gather_into_tensor_coalesced";
    TORCH_CHECK(outputs.size() == inputs.size(), "backend cc: ", w, ": ", outputs.size(), " outputs for ",
                inputs.size(), " inputs");
    auto op = mkop(w);
    std::vector<Slot> slots;
    std::vector<std::function<cc_result(cc_comm *)>> calls;
    for (size_t i = 0; i < inputs.size(); i++) {
      check_tensor(inputs[i], w);
      check_tensor(outputs[i], w);
      TORCH_CHECK(outputs[i].scalar_type() == inputs[i].scalar_type(), "backend cc: ", w, ": output ", i, " (",
                  dtype_name(outputs[i].scalar_type()), ") and input (", dtype_name(inputs[i].scalar_type()),
                  ") differ");
      TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * getSize(), "backend cc: ", w, ": output ", i, " has ",
                  outputs[i].numel(), " elements, not ", getSize(), " x the input's ", inputs[i].numel());
      Slot o = slot(outputs[i], false);
      at::Tensor src = contig(inputs[i]);
      Kind k = move_kind(src.scalar_type());
      size_t n = (size_t)src.numel() * k.mult;
      void *sp = ptr(src), *rp = ptr(o.buf);
      calls.push_back([=](cc_comm *c) { return cc_all_gather(c, sp, rp, n, k.t); });
      op->keep.push_back(src);
      slots.push_back(o);
    }
    op->issue = chain(calls);
    finish_slots(*op, slots);
    op->outputs = outputs;
    return submit(std::move(op), c10d::OpType::COALESCED);
  }

  // Several reduce_scatter_tensor in one op: outputs[i] receives block `rank`
  // of the reduction of inputs[i]. One dtype (torch asks for one; a PREMUL_SUM
  // makes one cc op for it).
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                 std::vector<at::Tensor> &inputs,
                                                                 const c10d::ReduceScatterOptions &opts) override {
    const char *w = "reduce_scatter_tensor_coalesced";
    TORCH_CHECK(outputs.size() == inputs.size() && !inputs.empty(), "backend cc: ", w, ": ", outputs.size(),
                " outputs for ", inputs.size(), " inputs");
    at::ScalarType dt = inputs[0].scalar_type();
    for (size_t i = 0; i < inputs.size(); i++) {
      check_tensor(inputs[i], w);
      check_tensor(outputs[i], w);
      TORCH_CHECK(inputs[i].scalar_type() == dt && outputs[i].scalar_type() == dt, "backend cc: ", w,
                  ": tensors of different dtypes (", dtype_name(inputs[i].scalar_type()), ", ",
                  dtype_name(outputs[i].scalar_type()), " and ", dtype_name(dt), ")");
      TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * getSize(), "backend cc: ", w, ": input ", i, " has ",
                  inputs[i].numel(), " elements, not ", getSize(), " x the output's ", outputs[i].numel());
    }
    std::unique_lock<std::mutex> l(comm_->mu);
    comm_->flush_locked();
    cc_dtype t = reduce_dtype(dt, w);
    cc_op cop = resolve_op(opts.reduceOp, dt, t, w);
    auto op = mkop(w);
    std::vector<Slot> slots;
    std::vector<std::function<cc_result(cc_comm *)>> calls;
    for (size_t i = 0; i < inputs.size(); i++) {
      Slot o = slot(outputs[i], false);
      at::Tensor src = contig(inputs[i]);
      size_t n = (size_t)outputs[i].numel();
      void *sp = ptr(src), *rp = ptr(o.buf);
      calls.push_back([=](cc_comm *c) { return cc_reduce_scatter(c, sp, rp, n, t, cop); });
      op->keep.push_back(src);
      slots.push_back(o);
    }
    op->issue = chain(calls);
    finish_slots(*op, slots);
    op->outputs = outputs;
    return submit_locked(l, std::move(op), c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED);
  }
#endif

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override {
    const char *w = "gather";
    one(inputs, w);
    check_root(opts.rootRank, w);
    int root = (int)opts.rootRank;
    const at::Tensor &in = inputs[0];
    auto op = mkop(w);
    at::Tensor src = contig(in), flat;
    bool copy = false;
    if (getRank() == root) {
      TORCH_CHECK(outputs.size() == 1 && (int)outputs[0].size() == getSize(),
                  "backend cc: gather: the root needs one list of ", getSize(), " output tensors");
      check_same(outputs[0], in, w);
      copy = flat_of(outputs[0], in.numel(), in, false, &flat);
      op->outputs = outputs[0];
    } else {
      TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                  "backend cc: gather: only the root (rank ", root, ") takes an output list");
    }
    Kind k = move_kind(in.scalar_type());
    size_t n = (size_t)in.numel() * k.mult;
    void *sp = ptr(src), *rp = flat.defined() ? ptr(flat) : nullptr;
    op->issue = [=](cc_comm *c) { return cc_gather(c, sp, rp, n, k.t, root); };
    op->keep = {src};
    if (flat.defined()) op->keep.push_back(flat);
    if (copy) {
      auto outs = outputs[0];
      op->finish = [outs, flat]() { scatter_copy(outs, flat); };
    }
    return submit(std::move(op), c10d::OpType::GATHER);
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override {
    const char *w = "scatter";
    one(outputs, w);
    check_root(opts.rootRank, w);
    int root = (int)opts.rootRank;
    auto op = mkop(w);
    Slot o = slot(outputs[0], false);
    at::Tensor flat;
    if (getRank() == root) {
      TORCH_CHECK(inputs.size() == 1 && (int)inputs[0].size() == getSize(),
                  "backend cc: scatter: the root needs one list of ", getSize(), " input tensors");
      check_same(inputs[0], outputs[0], w);
      flat_of(inputs[0], outputs[0].numel(), outputs[0], true, &flat);
    } else {
      TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                  "backend cc: scatter: only the root (rank ", root, ") takes an input list");
    }
    Kind k = move_kind(outputs[0].scalar_type());
    size_t n = (size_t)outputs[0].numel() * k.mult;
    void *sp = flat.defined() ? ptr(flat) : nullptr, *rp = ptr(o.buf);
    op->issue = [=](cc_comm *c) { return cc_scatter(c, sp, rp, n, k.t, root); };
    if (flat.defined()) op->keep.push_back(flat);
    finish_slots(*op, {o});
    op->outputs = outputs;
    return submit(std::move(op), c10d::OpType::SCATTER);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override {
    const char *w = "reduce_scatter";
    one(outputs, w);
    TORCH_CHECK(inputs.size() == 1, "backend cc: reduce_scatter: one input list per process, got ", inputs.size());
    const at::Tensor &out = outputs[0];
    check_tensor(out, w);
    at::Tensor flat;
    auto &list = inputs[0];
    if (list.size() == 1 && getSize() > 1 && list[0].numel() == out.numel() * getSize()) {
      // One tensor holding every rank's block, as reduce_scatter_tensor takes it.
      check_tensor(list[0], w);
      TORCH_CHECK(list[0].scalar_type() == out.scalar_type(), "backend cc: ", w, ": input ",
                  dtype_name(list[0].scalar_type()), " and output ", dtype_name(out.scalar_type()), " differ");
      flat = contig(list[0]).reshape({-1});
    } else {
      TORCH_CHECK((int)list.size() == getSize(), "backend cc: reduce_scatter: the input list has ", list.size(),
                  " tensors for ", getSize(), " ranks");
      check_same(list, out, w);
      flat_of(list, out.numel(), out, true, &flat);
    }
    return reduce_scatter_flat(out, flat, opts.reduceOp, w, c10d::OpType::REDUCE_SCATTER);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                      const c10d::ReduceScatterOptions &opts) override {
    const char *w = "reduce_scatter_tensor";
    check_tensor(output, w);
    check_tensor(input, w);
    TORCH_CHECK(output.scalar_type() == input.scalar_type(), "backend cc: ", w, ": output ",
                dtype_name(output.scalar_type()), " and input ", dtype_name(input.scalar_type()), " differ");
    TORCH_CHECK(input.numel() == output.numel() * getSize(), "backend cc: ", w, ": the input has ", input.numel(),
                " elements, not ", getSize(), " x the output's ", output.numel());
    return reduce_scatter_flat(output, contig(input), opts.reduceOp, w, c10d::OpType::_REDUCE_SCATTER_BASE);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &outSplits, std::vector<int64_t> &inSplits,
                                               const c10d::AllToAllOptions &) override {
    const char *w = "all_to_all_single";
    check_tensor(output, w);
    check_tensor(input, w);
    TORCH_CHECK(output.scalar_type() == input.scalar_type(), "backend cc: ", w, ": output ",
                dtype_name(output.scalar_type()), " and input ", dtype_name(input.scalar_type()), " differ");
    int P = getSize();
    auto op = mkop(w);
    Slot o = slot(output, false);
    at::Tensor src = contig(input);
    Kind k = move_kind(input.scalar_type());
    if (outSplits.empty() && inSplits.empty()) {
      TORCH_CHECK(input.numel() == output.numel() && input.numel() % P == 0, "backend cc: ", w,
                  ": without split sizes, input and output need the same number of elements, a multiple of ", P,
                  " (got ", input.numel(), " and ", output.numel(), ")");
      size_t n = (size_t)(input.numel() / P) * k.mult;
      void *sp = ptr(src), *rp = ptr(o.buf);
      if (sp == rp) {  // cc's in place all_to_all
        op->issue = [=](cc_comm *c) { return cc_all_to_all(c, rp, rp, n, k.t); };
      } else {
        op->issue = [=](cc_comm *c) { return cc_all_to_all(c, sp, rp, n, k.t); };
      }
    } else {
      std::vector<size_t> sc, sd, rc, rd;
      splits(input, inSplits, k, w, "input", &sc, &sd);
      splits(output, outSplits, k, w, "output", &rc, &rd);
      void *sp = ptr(src), *rp = ptr(o.buf);
      if (sp == rp) {  // not in place for cc's v variant: send from a copy
        src = src.clone();
        sp = ptr(src);
      }
      op->issue = [=](cc_comm *c) {
        return cc_all_to_all_v(c, sp, sc.data(), sd.data(), rp, rc.data(), rd.data(), k.t);
      };
    }
    op->keep = {src};
    finish_slots(*op, {o});
    op->outputs = {output};
    return submit(std::move(op), c10d::OpType::ALLTOALL_BASE);
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &) override {
    const char *w = "all_to_all";
    int P = getSize();
    TORCH_CHECK((int)outputs.size() == P && (int)inputs.size() == P, "backend cc: all_to_all: ", inputs.size(),
                " inputs and ", outputs.size(), " outputs for ", P, " ranks");
    auto dt = inputs[0].scalar_type();
    for (auto *list : {&inputs, &outputs})
      for (auto &t : *list) {
        check_tensor(t, w);
        TORCH_CHECK(t.scalar_type() == dt, "backend cc: all_to_all: tensors of different dtypes (",
                    dtype_name(t.scalar_type()), " and ", dtype_name(dt), ")");
      }
    auto op = mkop(w);
    Kind k = move_kind(dt);
    std::vector<size_t> sc(P), sd(P), rc(P), rd(P);
    size_t so = 0, ro = 0;
    std::vector<at::Tensor> sflat, rviews;
    for (int i = 0; i < P; i++) {
      sc[i] = (size_t)inputs[i].numel() * k.mult;
      sd[i] = so;
      so += sc[i];
      rc[i] = (size_t)outputs[i].numel() * k.mult;
      rd[i] = ro;
      ro += rc[i];
      sflat.push_back(inputs[i].reshape({-1}));
    }
    at::Tensor sbuf = at::cat(sflat);
    int64_t rtotal = 0;
    for (auto &t : outputs) rtotal += t.numel();
    at::Tensor rbuf = at::empty({rtotal}, inputs[0].options());
    void *sp = ptr(sbuf), *rp = ptr(rbuf);
    op->issue = [=](cc_comm *c) {
      return cc_all_to_all_v(c, sp, sc.data(), sd.data(), rp, rc.data(), rd.data(), k.t);
    };
    op->keep = {sbuf, rbuf};
    auto outs = outputs;
    op->finish = [outs, rbuf]() {
      int64_t off = 0;
      for (auto &t : outs) {
        int64_t n = t.numel();
        at::Tensor o = t;
        o.copy_(rbuf.narrow(0, off, n).view(t.sizes()));
        off += n;
      }
    };
    op->outputs = outputs;
    return submit(std::move(op), c10d::OpType::ALLTOALL);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override {
    auto op = mkop("barrier");
    op->issue = [](cc_comm *c) { return cc_barrier(c); };
    return submit(std::move(op), c10d::OpType::BARRIER);
  }

  // The Python API of torch 1.13 lets only gloo call this (dist.monitored_barrier
  // checks the backend); torch_cc.monitored_barrier calls it on a cc group. It
  // meets through the store, so that rank 0 can name who did not come.
  void monitoredBarrier(const c10d::BarrierOptions &opts, bool waitAllRanks) override {
    auto timeout = opts.timeout == c10d::kUnsetTimeout ? store_->getTimeout() : opts.timeout;
    std::string pre = "cc_monitored_barrier/" + std::to_string(mb_seq_++) + "/";
    int r = getRank(), P = getSize();
    if (r != 0) {
      store_->set(pre + std::to_string(r), std::vector<uint8_t>{1});
      // rank 0 may take the whole timeout to find someone missing: wait for its verdict longer
      auto verdict = 2 * timeout + std::chrono::milliseconds(5000);
      try {
        store_->wait({pre + "done"}, verdict);
      } catch (const std::exception &) {
        TORCH_CHECK(false, "backend cc: monitored_barrier: rank ", r, " waited ", verdict.count(),
                    " ms for rank 0 to see every rank arrive (rank 0 itself did not come?)");
      }
      std::vector<uint8_t> v = store_->get(pre + "done");
      TORCH_CHECK(v.size() == 1 && v[0] == 1, "backend cc: monitored_barrier: rank 0 found ranks missing: ",
                  std::string(v.begin() + 1, v.end()));
      return;
    }
    auto deadline = Clock::now() + timeout;
    std::vector<int> missing;
    for (int i = 1; i < P; i++) {
      const std::string key = pre + std::to_string(i);
      bool here = store_->check({key});  // those that came while rank 0 waited for another
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (!here && left.count() > 0) {
        try {
          store_->wait({key}, left);
          here = true;
        } catch (const std::exception &) {
        }
      }
      if (!here) {
        missing.push_back(i);
        if (!waitAllRanks) break;
      }
    }
    if (missing.empty()) {
      store_->set(pre + "done", std::vector<uint8_t>{1});
      return;
    }
    std::ostringstream o;
    o << (missing.size() == 1 ? "rank " : "ranks ");
    for (size_t i = 0; i < missing.size(); i++) o << (i ? ", " : "") << missing[i];
    std::string who = o.str();
    std::string flag = std::string(1, '\0') + who;  // 0, then who was missing
    store_->set(pre + "done", std::vector<uint8_t>(flag.begin(), flag.end()));
    TORCH_CHECK(false, "backend cc: monitored_barrier: rank 0: ", who, " did not reach the barrier within ",
                timeout.count(), " ms", waitAllRanks ? "" : " (the first one missing; wait_all_ranks=True names all)");
  }

  // ---- point to point

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override {
    const char *w = "send";
    one(tensors, w);
    check_peer(dst, w);
    TORCH_CHECK(tag >= 0, "backend cc: send: tag ", tag, " is negative");
    auto op = mkop(w);
    at::Tensor src = contig(tensors[0]);
    Kind k = move_kind(src.scalar_type());
    void *p = ptr(src);
    size_t n = (size_t)src.numel() * k.mult;
    op->issue = [=](cc_comm *c) { return cc_send(c, p, n, k.t, dst, tag); };
    op->keep = {src};
    op->outputs = tensors;
    return submit(std::move(op), c10d::OpType::SEND);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override {
    const char *w = "recv";
    one(tensors, w);
    check_peer(src, w);
    TORCH_CHECK(tag >= 0, "backend cc: recv: tag ", tag, " is negative");
    auto op = mkop(w);
    Slot s = slot(tensors[0], false);
    Kind k = move_kind(s.buf.scalar_type());
    void *p = ptr(s.buf);
    size_t n = (size_t)s.buf.numel() * k.mult;
    op->issue = [=](cc_comm *c) { return cc_recv(c, p, n, k.t, src, tag); };
    finish_slots(*op, {s});
    op->outputs = tensors;
    return submit(std::move(op), c10d::OpType::RECV, src);
  }

  // dist.recv(t) without src: cc_recv_any; Work::sourceRank() is the sender
  // once the receive completed.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override {
    const char *w = "recv";
    one(tensors, w);
    TORCH_CHECK(tag >= 0, "backend cc: recv: tag ", tag, " is negative");
    auto op = mkop(w);
    Slot s = slot(tensors[0], false);
    Kind k = move_kind(s.buf.scalar_type());
    void *p = ptr(s.buf);
    size_t n = (size_t)s.buf.numel() * k.mult;
    auto src = std::make_shared<int>(CC_UNDEFINED);
    int *sp = src.get();
    op->source = src;
    op->issue = [=](cc_comm *c) { return cc_recv_any(c, p, n, k.t, tag, sp); };
    finish_slots(*op, {s});
    op->outputs = tensors;
    return submit(std::move(op), c10d::OpType::RECVANYSOURCE);
  }

  // ---- batches (batch_isend_irecv): one cc group, one request for all

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  void startCoalescing() override { start_batch(); }
  c10::intrusive_ptr<c10d::Work> endCoalescing() override { return end_batch(); }
#else
  void startCoalescing() override { start_batch(); }
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>> &) override { end_batch(); }
#endif

  // For bench/torch_compare.py: seconds per bare cc_all_reduce of `count`
  // float32 on this group's communicator, `iters` calls after a barrier (the
  // same call torch's all_reduce makes, without torch around it).
  double bare_all_reduce_seconds(int64_t count, int64_t iters) {
    std::lock_guard<std::mutex> l(comm_->mu);
    comm_->flush_locked();
    std::vector<float> buf((size_t)count, 1.0f);
    cc_result r = cc_barrier(comm_->c);
    auto t0 = Clock::now();
    for (int64_t i = 0; i < iters && r == CC_OK; i++)
      r = cc_all_reduce(comm_->c, buf.data(), buf.data(), (size_t)count, CC_FLOAT32, CC_SUM);
    auto t1 = Clock::now();
    TORCH_CHECK(r == CC_OK, failure_text("all_reduce", getRank(), r, cc_comm_last_error(comm_->c)));
    return std::chrono::duration<double>(t1 - t0).count() / (double)(iters > 0 ? iters : 1);
  }

 private:
  std::shared_ptr<CCComm> comm_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::string group_id_;
  std::vector<int64_t> global_ranks_;
  uint64_t mb_seq_ = 0;
  uint64_t seq_ = 0;  // collectives issued (getSequenceNumberForGroup)
  std::atomic<bool> closed_{false};
  bool together_ = true;  // leave_together when it goes (not a group made by split())

  void start(cc_comm *c) {
    comm_ = std::make_shared<CCComm>(c);
    uint64_t defer_us = 1000;
    const char *d = getenv("CC_TORCH_DEFER_US");
    if (d && *d) defer_us = strtoull(d, nullptr, 10);
    comm_->start(defer_us);
  }

  std::unique_ptr<Op> mkop(const char *name) {
    auto op = std::make_unique<Op>();
    op->name = name;
    return op;
  }

  void one(const std::vector<at::Tensor> &tensors, const char *what) {
    TORCH_CHECK(tensors.size() == 1, "backend cc: ", what, ": one tensor per process, got ", tensors.size());
    check_tensor(tensors[0], what);
  }
  void check_root(int64_t root, const char *what) {
    TORCH_CHECK(root >= 0 && root < getSize(), "backend cc: ", what, ": root ", root, " is out of range (group of ",
                getSize(), " ranks)");
  }
  void check_peer(int peer, const char *what) {
    TORCH_CHECK(peer >= 0 && peer < getSize(), "backend cc: ", what, ": peer ", peer,
                " is out of range (group of ", getSize(), " ranks)");
  }

  // cc calls one after the other; the first failure ends them.
  static std::function<cc_result(cc_comm *)> chain(std::vector<std::function<cc_result(cc_comm *)>> calls) {
    return [calls](cc_comm *c) {
      for (auto &f : calls) {
        cc_result r = f(c);
        if (r != CC_OK) return r;
      }
      return CC_OK;
    };
  }

  static void finish_slots(Op &op, const std::vector<Slot> &slots) {
    std::vector<Slot> back;
    for (auto &s : slots) {
      op.keep.push_back(s.buf);
      if (s.back) back.push_back(s);
    }
    if (!back.empty())
      op.finish = [back]() {
        for (auto &s : back) {
          at::Tensor u = s.user;
          u.copy_(s.buf);
        }
      };
  }

  static void scatter_copy(const std::vector<at::Tensor> &outs, const at::Tensor &flat) {
    int64_t off = 0;
    for (auto &t : outs) {
      int64_t n = t.numel();
      at::Tensor o = t;
      o.copy_(flat.narrow(0, off, n).view(t.sizes()));
      off += n;
    }
  }

  void splits(const at::Tensor &t, const std::vector<int64_t> &sp, Kind k, const char *w, const char *which,
              std::vector<size_t> *counts, std::vector<size_t> *displs) {
    int P = getSize();
    int64_t rows = t.dim() ? t.size(0) : 1;
    int64_t row = rows ? t.numel() / rows : 0;
    counts->assign(P, 0);
    displs->assign(P, 0);
    if (sp.empty()) {
      TORCH_CHECK(rows % P == 0, "backend cc: ", w, ": the ", which, "'s first dimension (", rows,
                  ") does not split evenly over ", P, " ranks");
      for (int i = 0; i < P; i++) (*counts)[i] = (size_t)(rows / P * row) * k.mult;
    } else {
      TORCH_CHECK((int)sp.size() == P, "backend cc: ", w, ": ", sp.size(), " ", which, " split sizes for ", P,
                  " ranks");
      int64_t sum = 0;
      for (int i = 0; i < P; i++) {
        TORCH_CHECK(sp[i] >= 0, "backend cc: ", w, ": negative ", which, " split size ", sp[i]);
        sum += sp[i];
        (*counts)[i] = (size_t)(sp[i] * row) * k.mult;
      }
      TORCH_CHECK(sum == rows, "backend cc: ", w, ": the ", which, " split sizes add up to ", sum, ", not the ",
                  which, "'s first dimension ", rows);
    }
    size_t off = 0;
    for (int i = 0; i < P; i++) {
      (*displs)[i] = off;
      off += (*counts)[i];
    }
  }

  // The cc op for torch's ReduceOp on this dtype (with comm_->mu held: a
  // PREMUL_SUM makes a cc op). bool travels as uint8 with the op gloo's
  // arithmetic on bool amounts to: SUM and MAX are OR, PRODUCT and MIN are AND.
  cc_op resolve_op(const c10d::ReduceOp &rop, at::ScalarType s, cc_dtype t, const char *what) {
    auto o = rop.op_;
    bool is_int = at::isIntegralType(s, /*includeBool=*/true);
    if (s == at::kBool) {
      switch (o) {
      case c10d::ReduceOp::SUM: case c10d::ReduceOp::MAX: case c10d::ReduceOp::BOR: return CC_BOR;
      case c10d::ReduceOp::PRODUCT: case c10d::ReduceOp::MIN: case c10d::ReduceOp::BAND: return CC_BAND;
      case c10d::ReduceOp::BXOR: return CC_BXOR;
      default:
        TORCH_CHECK(false, "backend cc: ", what, ": ReduceOp.", op_name(o), " is not defined for torch.bool");
      }
    }
    switch (o) {
    case c10d::ReduceOp::SUM: return CC_SUM;
    case c10d::ReduceOp::PRODUCT: return CC_PROD;
    case c10d::ReduceOp::MIN: return CC_MIN;
    case c10d::ReduceOp::MAX: return CC_MAX;
    case c10d::ReduceOp::BAND: case c10d::ReduceOp::BOR: case c10d::ReduceOp::BXOR:
      TORCH_CHECK(is_int, "backend cc: ", what, ": ReduceOp.", op_name(o), " is for integer dtypes, not ",
                  dtype_name(s));
      return o == c10d::ReduceOp::BAND ? CC_BAND : o == c10d::ReduceOp::BOR ? CC_BOR : CC_BXOR;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!is_int, "backend cc: ", what, ": ReduceOp.AVG is for floating-point and complex dtypes, not ",
                  dtype_name(s), " (reduce with SUM and divide)");
      return CC_AVG;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(rop.supplement_.defined(), "backend cc: ", what, ": PREMUL_SUM without its factor");
      auto *sup = static_cast<c10d::NCCLPreMulSumSupplement *>(rop.supplement_.get());
      at::Tensor f = premul_factor(*sup);
      if (!f.defined()) f = at::scalar_tensor(sup->double_factor, at::TensorOptions().dtype(at::kDouble));
      f = f.to(at::kCPU).to(s).reshape({-1});
      TORCH_CHECK(f.numel() == 1, "backend cc: ", what, ": PREMUL_SUM takes one factor, got ", f.numel());
      f = f.contiguous();
      return comm_->premul_locked(t, f.data_ptr(), what);
    }
    default:
      TORCH_CHECK(false, "backend cc: ", what, ": unknown ReduceOp ", (int)o);
    }
  }

  c10::intrusive_ptr<c10d::Work> reduce_like(std::vector<at::Tensor> &tensors, const c10d::ReduceOp &rop,
                                             const char *w, int root, c10d::OpType type) {
    std::unique_lock<std::mutex> l(comm_->mu);
    comm_->flush_locked();  // the previous op is issued before a premul op is made
    auto op = mkop(w);
    Slot s = slot(tensors[0], true);
    if (root >= 0 && root != getRank()) s.back = false;  // only the root receives
    cc_dtype t = reduce_dtype(s.buf.scalar_type(), w);
    cc_op o = resolve_op(rop, s.buf.scalar_type(), t, w);
    void *p = ptr(s.buf);
    size_t n = (size_t)s.buf.numel();
    if (root < 0) op->issue = [=](cc_comm *c) { return cc_all_reduce(c, p, p, n, t, o); };
    else op->issue = [=](cc_comm *c) { return cc_reduce(c, p, p, n, t, o, root); };
    finish_slots(*op, {s});
    op->outputs = tensors;
    return submit_locked(l, std::move(op), type);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_flat(const at::Tensor &out, const at::Tensor &flat,
                                                     const c10d::ReduceOp &rop, const char *w, c10d::OpType type) {
    std::unique_lock<std::mutex> l(comm_->mu);
    comm_->flush_locked();
    auto op = mkop(w);
    Slot o = slot(out, false);
    cc_dtype t = reduce_dtype(out.scalar_type(), w);
    cc_op cop = resolve_op(rop, out.scalar_type(), t, w);
    size_t n = (size_t)out.numel();
    void *sp = ptr(flat), *rp = ptr(o.buf);
    op->issue = [=](cc_comm *c) { return cc_reduce_scatter(c, sp, rp, n, t, cop); };
    op->keep = {flat};
    finish_slots(*op, {o});
    op->outputs = {out};
    return submit_locked(l, std::move(op), type);
  }

  c10::intrusive_ptr<c10d::Work> submit(std::unique_ptr<Op> op, c10d::OpType type, int src = -1) {
    std::unique_lock<std::mutex> l(comm_->mu);
    return submit_locked(l, std::move(op), type, src);
  }

  // With comm_->mu held: the previous deferred op is issued, this one is
  // deferred (or issued at once when deferring is off, or queued in a batch).
  c10::intrusive_ptr<c10d::Work> submit_locked(std::unique_lock<std::mutex> &, std::unique_ptr<Op> op,
                                               c10d::OpType type, int src = -1) {
    TORCH_CHECK(comm_->alive(), "backend cc: the process group was destroyed");
    if (type != c10d::OpType::SEND && type != c10d::OpType::RECV && type != c10d::OpType::RECVANYSOURCE) seq_++;
    auto work = c10::make_intrusive<CCWork>(comm_, std::move(op), type, src);
    comm_->flush_locked();
    if (comm_->coalescing || comm_->defer_ns == 0) work->issue_async_locked();
    else comm_->defer_locked(work);
    return work;
  }

  void start_batch() {
    std::lock_guard<std::mutex> l(comm_->mu);
    TORCH_CHECK(!comm_->coalescing, "backend cc: a batch is already open");
    comm_->flush_locked();
    cc_group_begin(comm_->c);
    comm_->coalescing = true;
  }

  // Ends the batch's cc group: one request for all its works. Returns a work
  // for the whole batch (what torch 2.1's endCoalescing returns).
  c10::intrusive_ptr<c10d::Work> end_batch() {
    std::vector<c10::intrusive_ptr<CCWork>> futs;
    auto whole = c10::make_intrusive<CCWork>(comm_, mkop("batch_isend_irecv"), c10d::OpType::UNKNOWN, -1);
    {
      std::lock_guard<std::mutex> l(comm_->mu);
      TORCH_CHECK(comm_->coalescing, "backend cc: no batch is open");
      comm_->coalescing = false;
      cc_request *req = nullptr;
      cc_result r = cc_group_end(comm_->c, &req);
      auto batch = std::move(comm_->batch);
      comm_->batch.clear();
      batch.push_back(whole);
      futs = std::move(comm_->batch_futures);
      comm_->batch_futures.clear();
      if (r != CC_OK) {
        std::string m = cc_comm_last_error(comm_->c);
        for (auto &w : batch) {
          w->state_.store(CCWork::RUNNING);
          w->complete(r, m);
        }
      } else {
        auto rq = std::make_shared<Req>(comm_, req);
        for (auto &w : batch) w->attach_locked(rq);
      }
    }
    for (auto &w : futs) comm_->watch(w);
    return whole;
  }
};

static c10::intrusive_ptr<CCBase> create(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                                         std::chrono::milliseconds timeout, std::string group_id,
                                         std::vector<int64_t> global_ranks) {
  return c10::make_intrusive<ProcessGroupCC>(store, rank, size, timeout, std::move(group_id), std::move(global_ranks));
}

}  // namespace torch_cc

PYBIND11_MODULE(_C, m) {
  namespace py = pybind11;
  py::module_::import("torch.distributed");
  m.doc() = "cc (collective communication in one header) as a torch.distributed backend";
  py::class_<torch_cc::ProcessGroupCC, torch_cc::CCBase, c10::intrusive_ptr<torch_cc::ProcessGroupCC>>(
      m, "ProcessGroupCC")
      .def("_bare_all_reduce_seconds", &torch_cc::ProcessGroupCC::bare_all_reduce_seconds, py::arg("count"),
           py::arg("iters"), py::call_guard<py::gil_scoped_release>(),
           "seconds per bare cc_all_reduce of `count` float32 (bench/torch_compare.py)");
  m.def("create", &torch_cc::create, py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
        py::arg("group_id") = std::string(), py::arg("global_ranks") = std::vector<int64_t>(),
        py::call_guard<py::gil_scoped_release>(),
        "a cc process group of `size` ranks meeting through `store` (what Backend.register_backend calls)");
  m.attr("cc_version") = CC_VERSION_STRING;
  m.attr("torch_version_built") = TORCH_VERSION;
}
