// process_group_nccl.cpp: the `nccl` backend (see process_group_nccl.h): the
// communicator, Work, host staging and the watchdog; the operations are in
// process_group_nccl_collectives.cpp.
//
// Compiled only when CMake found CUDA and NCCL (COURSE_HAVE_NCCL). Every NCCL and CUDA
// call goes through nccl_check.h.
#include "process_group_nccl.h"

#include <cstdio>
#include <map>
#include <utility>

#include "process_group_nccl_impl.h"

namespace course {

namespace {

// The number of groups each rank (of this process) has constructed under each prefix:
// makes each group's store key unique, as long as every rank constructs its groups in the
// same order (rule 1 of process_group.h). Counted per rank, so that ranks run as threads
// of one process (the tests) agree too.
int next_group_number(const std::string& prefix, int rank) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, int> made;
  std::lock_guard<std::mutex> lock(mu);
  return made[{prefix, rank}]++;
}

std::string ms_str(Millis t) {
  return std::to_string(t.count()) + " ms";
}

std::string to_hex(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

ncclUniqueId from_hex(const std::string& hex, const std::string& key) {
  ncclUniqueId id{};
  if (hex.size() != 2 * sizeof(id.internal)) {
    throw ProtocolError("nccl rendezvous: the store's " + key + " holds " +
                        std::to_string(hex.size()) + " characters, not an NCCL unique id of " +
                        std::to_string(2 * sizeof(id.internal)) +
                        ": two jobs share one store, or a group prefix is reused");
  }
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    unsigned v = 0;
    std::sscanf(hex.c_str() + 2 * i, "%2x", &v);
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

}  // namespace

// ---- Work ----------------------------------------------------------------------------

void NcclWork::wait(Millis timeout) {
  wait_event(timeout);
  if (!staging_) return;
  std::lock_guard<std::mutex> lock(copy_mu_);
  if (!copied_) {
    staging_->copy_back(state_->what);
    copied_ = true;
  }
}

void NcclWork::wait_event(Millis timeout) {
  const auto deadline = NcclClock::now() + timeout;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->error) std::rethrow_exception(state_->error);
      if (state_->finished) return;
    }
    const cudaError_t q = cudaEventQuery(state_->done);
    if (q == cudaSuccess) {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->error) std::rethrow_exception(state_->error);
      state_->finished = true;
      return;
    }
    if (q != cudaErrorNotReady) check_cuda_call(q, "waiting for " + state_->what);
    if (NcclClock::now() >= deadline) {
      throw TimeoutError("nccl " + state_->what + " did not finish within " + ms_str(timeout) +
                         "; it keeps running (wait again, and keep its buffer alive): a rank "
                         "that never called it is the usual cause");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool NcclWork::is_completed() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->finished || state_->error) return true;
  }
  return cudaEventQuery(state_->done) != cudaErrorNotReady;
}

// ---- the communicator ----------------------------------------------------------------

void NcclProcessGroup::Impl::check_not_aborted_locked() const {
  if (!abort_reason.empty()) {
    throw NetworkError(
        "this nccl group was aborted, and every call on it now fails; make a new group "
        "(restart the job). The reason: " +
        abort_reason);
  }
}

float* NcclProcessGroup::Impl::device_ptr(const float* p, size_t n, const std::string& op,
                                          const char* name, NcclStaging& staging,
                                          bool is_output) const {
  float* const mutable_p = const_cast<float*>(p);
  if (n == 0) return mutable_p;
  cudaPointerAttributes attr{};
  const cudaError_t status = cudaPointerGetAttributes(&attr, p);
  if (status != cudaSuccess) cudaGetLastError();  // clears the sticky "invalid value"
  const bool on_device = status == cudaSuccess &&
                         (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged);
  if (on_device && attr.device != options.device) {
    throw ConfigError("nccl " + op + ": `" + name + "` lives on GPU " +
                      std::to_string(attr.device) + ", but this rank's group drives GPU " +
                      std::to_string(options.device) +
                      ": create tensors after cuda_set_device(LOCAL_RANK)");
  }
  if (on_device) return mutable_p;
  // Host memory: a device copy for the operation (small buffers: statistics, flags).
  check_cuda_call(cudaSetDevice(options.device), "cudaSetDevice");
  NcclStaging::Entry entry;
  entry.count = n;
  check_cuda_call(
      cudaMalloc(&entry.device, n * sizeof(float)),
      op + ": staging `" + name + "` (" + std::to_string(n) + " floats of host memory)");
  staging.entries.push_back(entry);  // freed with the staging from here on
  check_cuda_call(cudaMemcpy(entry.device, p, n * sizeof(float), cudaMemcpyHostToDevice),
                  op + ": copying `" + name + "` to the GPU");
  if (is_output) staging.entries.back().host_out = mutable_p;
  return entry.device;
}

void NcclProcessGroup::Impl::abort_locked(const std::string& reason,
                                          const std::exception_ptr& error,
                                          const NcclWorkState* culprit) {
  if (!abort_reason.empty()) return;
  abort_reason = reason;
  if (comm) {
    ncclCommAbort(comm);
    comm = nullptr;
  }
  const auto others = std::make_exception_ptr(
      NetworkError("nccl: the group was aborted before this operation finished: " + reason));
  for (const auto& st : pending) {
    std::lock_guard<std::mutex> lock(st->mu);
    if (st->finished) continue;
    st->error = (culprit == nullptr || st.get() == culprit) ? error : others;
    st->finished = true;
  }
  pending.clear();
}

void NcclProcessGroup::Impl::await_accepted_locked(const std::string& what,
                                                   NcclClock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm, &state), what + " (ncclCommGetAsyncError)");
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const auto error = nccl_error(state, what);
      abort_locked("asynchronous NCCL error in " + what, error);
      std::rethrow_exception(error);
    }
    if (NcclClock::now() >= deadline) {
      const std::string reason = what + " was not accepted within " + ms_str(options.timeout);
      const auto error = std::make_exception_ptr(
          TimeoutError("nccl " + reason +
                       ": the group was aborted. A rank that never joined is the "
                       "usual cause; NCCL_DEBUG=INFO shows where NCCL waits"));
      abort_locked(reason, error);
      std::rethrow_exception(error);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

WorkPtr NcclProcessGroup::Impl::launch(const std::string& what,
                                       const std::function<ncclResult_t()>& enqueue,
                                       std::shared_ptr<NcclStaging> staging) {
  std::lock_guard<std::mutex> lock(mu);
  check_not_aborted_locked();
  const auto deadline = NcclClock::now() + options.timeout;
  check_cuda_call(cudaSetDevice(options.device),
                  "cudaSetDevice(" + std::to_string(options.device) + ")");
  // The operation reads what kernels queued on the caller's (default) stream wrote.
  check_cuda_call(cudaEventRecord(ready, nullptr), what + ": cudaEventRecord");
  check_cuda_call(cudaStreamWaitEvent(stream, ready, 0), what + ": cudaStreamWaitEvent");
  check_nccl(enqueue(), what);
  await_accepted_locked(what, deadline);
  auto state = std::make_shared<NcclWorkState>();
  state->what = what + " on rank " + std::to_string(rank) + " of " + std::to_string(world);
  state->deadline = deadline;
  check_cuda_call(cudaEventCreateWithFlags(&state->done, cudaEventDisableTiming),
                  what + ": cudaEventCreate");
  check_cuda_call(cudaEventRecord(state->done, stream), what + ": cudaEventRecord");
  pending.push_back(state);
  return std::make_shared<NcclWork>(std::move(state), std::move(staging));
}

void NcclProcessGroup::Impl::watch() {
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    wake.wait_for(lock, options.watchdog_interval);
    if (stopping || !abort_reason.empty() || comm == nullptr) continue;
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      abort_locked("asynchronous NCCL error: " + std::string(ncclGetErrorString(async)),
                   nccl_error(async, "(asynchronous error found by the watchdog)"));
      continue;
    }
    const auto now = NcclClock::now();
    for (size_t i = 0; i < pending.size();) {
      NcclWorkState& st = *pending[i];
      const cudaError_t q = cudaEventQuery(st.done);
      if (q == cudaSuccess) {
        std::lock_guard<std::mutex> state_lock(st.mu);
        st.finished = true;
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (q != cudaErrorNotReady) {
        abort_locked(
            st.what + " failed on the GPU: " + cudaGetErrorString(q),
            std::make_exception_ptr(SystemError("nccl " + st.what + ": " + cudaGetErrorString(q))),
            &st);
        break;
      }
      if (now >= st.deadline) {
        const std::string reason = st.what + " did not finish within " + ms_str(options.timeout);
        abort_locked(reason,
                     std::make_exception_ptr(
                         TimeoutError("nccl watchdog: " + reason +
                                      "; the communicator was aborted. A rank that never called "
                                      "it, or called another operation, is the usual cause")),
                     &st);
        break;
      }
      ++i;
    }
  }
}

NcclProcessGroup::NcclProcessGroup(StoreClient& store, int rank, int world, NcclOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw ConfigError("NcclProcessGroup: rank " + std::to_string(rank) + " is outside a world of " +
                      std::to_string(world));
  }
  Impl& im = *impl_;
  im.rank = rank;
  im.world = world;
  im.options = std::move(options);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (count == 0) {
    throw ConfigError(
        "the nccl backend needs a CUDA GPU, and this machine has none that the driver "
        "sees (nvidia-smi lists them): run on --backend tcp or gloo with --device cpu");
  }
  if (im.options.device < 0) check_cuda_call(cudaGetDevice(&im.options.device), "cudaGetDevice");
  if (im.options.device >= count) {
    throw ConfigError("the nccl backend: this rank asked for GPU " +
                      std::to_string(im.options.device) + ", but this machine has " +
                      std::to_string(count) +
                      ": start at most one rank per GPU on each machine (NCCL refuses two "
                      "ranks on one GPU)");
  }
  check_cuda_call(cudaSetDevice(im.options.device), "cudaSetDevice");
  check_cuda_call(cudaStreamCreateWithFlags(&im.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda_call(cudaEventCreateWithFlags(&im.ready, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda_call(cudaMalloc(&im.scratch, sizeof(float)), "cudaMalloc (barrier scratch)");

  const std::string key = im.options.prefix + "/" +
                          std::to_string(next_group_number(im.options.prefix, rank)) + "/unique_id";
  ncclUniqueId id{};
  if (rank == 0) {
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    store.set(key, to_hex(id));
  } else {
    id = from_hex(store.get(key, im.options.timeout), key);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; we poll, under our own timeout
  const std::string what = "communicator of " + std::to_string(world) + " ranks on GPU " +
                           std::to_string(im.options.device) + " (store key " + key + ")";
  {
    std::lock_guard<std::mutex> lock(im.mu);
    check_nccl(ncclCommInitRankConfig(&im.comm, world, id, rank, &config),
               "ncclCommInitRankConfig, " + what);
    im.await_accepted_locked(what, NcclClock::now() + im.options.timeout);
  }
  im.watchdog = std::thread([&im] { im.watch(); });
}

NcclProcessGroup::~NcclProcessGroup() = default;

NcclProcessGroup::Impl::~Impl() {
  Impl& im = *this;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.stopping = true;
  }
  im.wake.notify_all();
  if (im.watchdog.joinable()) im.watchdog.join();
  if (im.comm) {
    // Let queued operations finish (bounded by the timeout), then release the
    // communicator; if anything is still stuck, abort instead of hanging here.
    const auto deadline = NcclClock::now() + im.options.timeout;
    bool idle = false;
    while (!idle && NcclClock::now() < deadline) {
      idle = cudaStreamQuery(im.stream) != cudaErrorNotReady;
      if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (idle) {
      ncclCommFinalize(im.comm);
      ncclResult_t state = ncclInProgress;
      while (state == ncclInProgress && NcclClock::now() < deadline) {
        if (ncclCommGetAsyncError(im.comm, &state) != ncclSuccess) break;
        if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      idle = state == ncclSuccess;
    }
    if (idle) {
      ncclCommDestroy(im.comm);
    } else {
      ncclCommAbort(im.comm);
    }
    im.comm = nullptr;
  }
  if (im.scratch) cudaFree(im.scratch);
  if (im.ready) cudaEventDestroy(im.ready);
  if (im.stream) cudaStreamDestroy(im.stream);
}

int NcclProcessGroup::rank() const {
  return impl_->rank;
}
int NcclProcessGroup::size() const {
  return impl_->world;
}
int NcclProcessGroup::device() const {
  return impl_->options.device;
}

std::string NcclProcessGroup::abort_reason() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->abort_reason;
}

}  // namespace course
