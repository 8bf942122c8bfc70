#include "checkers/prover/worker.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shardproof::prover {

namespace {
constexpr int kOutOfMemoryExit = 42;
constexpr int kJobThrewExit = 43;

std::size_t current_address_space() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  unsigned long pages = 0;
  if (std::fscanf(f, "%lu", &pages) != 1)
    pages = 0;
  std::fclose(f);
  return pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

void write_all(int fd, const std::string &data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void run_child(const std::function<std::string()> &job,
                            const WorkerLimits &limits, int out_fd) {
  std::size_t cap = current_address_space() + limits.memory_bytes;
  rlimit rl{cap, cap};
  setrlimit(RLIMIT_AS, &rl);
  int code = 0;
  try {
    write_all(out_fd, job());
  } catch (const std::bad_alloc &) {
    code = kOutOfMemoryExit;
  } catch (const std::exception &e) {
    // Z3 reports allocation failure under RLIMIT_AS as its own exception.
    bool memory = std::strstr(e.what(), "out of memory") != nullptr;
    if (!memory)
      write_all(out_fd, e.what());
    code = memory ? kOutOfMemoryExit : kJobThrewExit;
  } catch (...) {
    code = kJobThrewExit;
  }
  close(out_fd);
  _exit(code); // skip atexit handlers: they belong to the parent
}
} // namespace

WorkerOutcome run_in_worker(const std::function<std::string()> &job,
                            const WorkerLimits &limits) {
  using Clock = std::chrono::steady_clock;
  WorkerOutcome outcome;
  int fds[2];
  if (pipe(fds) != 0) {
    outcome.detail = std::string("pipe failed: ") + std::strerror(errno);
    return outcome;
  }
  std::fflush(nullptr);
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    outcome.detail = std::string("fork failed: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return outcome;
  }
  if (pid == 0) {
    close(fds[0]);
    run_child(job, limits, fds[1]);
  }
  close(fds[1]);

  auto deadline = start + limits.wall;
  bool timed_out = false;
  char buffer[65536];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // end of file: the child is done
    outcome.output.append(buffer, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out)
    kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  if (timed_out) {
    outcome.status = WorkerOutcome::Status::TimedOut;
    outcome.detail = "killed after the wall-clock limit of " +
                     std::to_string(limits.wall.count()) + " ms";
    outcome.output.clear();
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    outcome.status = WorkerOutcome::Status::Finished;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kOutOfMemoryExit) {
    outcome.status = WorkerOutcome::Status::OutOfMemory;
    outcome.detail = "ran out of its memory limit of " +
                     std::to_string(limits.memory_bytes >> 20) + " MiB";
    outcome.output.clear();
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kJobThrewExit) {
    outcome.status = WorkerOutcome::Status::Crashed;
    outcome.detail = "worker failed: " + outcome.output;
    outcome.output.clear();
  } else {
    outcome.status = WorkerOutcome::Status::Crashed;
    outcome.detail =
        WIFSIGNALED(status)
            ? std::string("worker died of signal ") + strsignal(WTERMSIG(status))
            : "worker exited with status " + std::to_string(WEXITSTATUS(status));
    outcome.output.clear();
  }
  return outcome;
}

} // namespace shardproof::prover
