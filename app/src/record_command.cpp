// tinescope record [--sched[=all]] -o run.tine -- PROGRAM ARGS...
// Runs a program with the recorder started from its environment
// (TINESCOPE_OUT), and with --sched records the kernel's scheduling of its
// threads (or of the whole machine) into the same trace, on its clock
// (import/tracefs_capture.hpp, kernel_sched.hpp). Exits with the program's
// status; 2 when it could not run.
#include <cpuid.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>
#include <x86intrin.h>

#include "commands.hpp"
#include "tinescope/import/tracefs_capture.hpp"
#include "tinescope/trace_writer.hpp"

namespace tinescope::app {

namespace {

// The recorder's choice of clock (recorder/src/clock.cpp): the TSC where
// it is invariant, unless TINESCOPE_CLOCK=monotonic.
bool recorder_uses_tsc() {
  const char* clock = std::getenv("TINESCOPE_CLOCK");
  if (clock && std::strcmp(clock, "monotonic") == 0) return false;
  unsigned a, b, c, d;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
}

uint64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

// A trace with no events of the program's own (it did not record): a
// header on the clock the kernel's events were read on.
bool write_empty_trace(const std::string& path, bool tsc, const std::string& program, std::string& why) {
  format::HeaderInfo info;
  info.process_name = program;
  if (tsc) {
    const uint64_t n0 = mono_ns(), k0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t n1 = mono_ns(), k1 = __rdtsc();
    info.clock.source = uint8_t(format::ClockSource::Tsc);
    info.clock.ticks_per_ns = double(k1 - k0) / double(n1 - n0);
    info.clock.ref_ticks = k1, info.clock.ref_mono_ns = n1;
  } else {
    info.clock.source = uint8_t(format::ClockSource::Monotonic);
    info.clock.ticks_per_ns = 1;
  }
  return import::create_trace_file(path, info, why);
}

}  // namespace

void add_record_command(CLI::App& app, int* exit_code) {
  static std::string out, sched;
  static std::vector<std::string> command;
  static uint32_t buffer_kb = 8192;
  auto* cmd = app.add_subcommand("record", "run a program that links the recorder, recording it; with --sched also "
                                           "the kernel's scheduling of its threads, into the same trace");
  cmd->add_option("-o,--output", out, "the trace to write (must not exist)")->required();
  cmd->add_option("--sched", sched,
                  "also the kernel's scheduling (tracefs): of the program's threads, or with --sched=all of every task")
      ->expected(0, 1)
      ->default_str("")
      ->check(CLI::IsMember({"", "program", "all"}));
  cmd->add_option("--sched-buffer-kb", buffer_kb, "the kernel's buffer per CPU (default 8192)");
  cmd->add_option("command", command, "the program and its arguments (after --)")->required();
  cmd->callback([=] {
    *exit_code = 2;
    struct stat st;
    if (::stat(out.c_str(), &st) == 0) {
      std::fprintf(stderr, "tinescope: %s exists: record writes a new trace, never over one\n", out.c_str());
      return;
    }
    const bool want_sched = cmd->count("--sched") > 0;
    const bool tsc = recorder_uses_tsc();
    import::SchedCapture capture;
    bool capturing = false;
    if (want_sched) {
      std::string why;
      import::SchedCaptureOptions o;
      o.whole_machine = sched == "all";
      o.tsc_clock = tsc;
      o.buffer_kb = buffer_kb;
      capturing = capture.open(o, why);
      if (!capturing)
        std::fprintf(stderr, "tinescope: the kernel's scheduling is not recorded: %s; recording the program alone\n",
                     why.c_str());
    }
    // The child waits for the word to go (so tracing follows it from its
    // first instruction), then runs the program; a failed exec says why
    // through a pipe that closes on success.
    int go[2], failed[2];
    if (::pipe(go) != 0) return void(std::perror("tinescope: pipe"));
    if (::pipe2(failed, O_CLOEXEC) != 0) {
      std::perror("tinescope: pipe");
      ::close(go[0]), ::close(go[1]);
      return;
    }
    // The terminal's ^C goes to the program; this process waits for it (and
    // takes its tracefs instance away after).
    struct sigaction ignore {}, old_int {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGINT, &ignore, &old_int);
    const pid_t child = ::fork();
    if (child < 0) {
      std::perror("tinescope: fork");
      ::sigaction(SIGINT, &old_int, nullptr);
      ::close(go[0]), ::close(go[1]), ::close(failed[0]), ::close(failed[1]);
      return;
    }
    if (child == 0) {
      ::sigaction(SIGINT, &old_int, nullptr);
      ::close(go[1]), ::close(failed[0]);
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(127);
      ::close(go[0]);
      ::setenv("TINESCOPE_OUT", out.c_str(), 1);
      if (!tsc) ::setenv("TINESCOPE_CLOCK", "monotonic", 1);
      std::vector<char*> argv;
      for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      const int e = errno;
      if (::write(failed[1], &e, sizeof e) < 0) {}
      ::_exit(127);
    }
    ::close(go[0]), ::close(failed[1]);
    if (capturing) {
      std::string why;
      if (!capture.follow(child, why) || !capture.on(why)) {
        std::fprintf(stderr, "tinescope: the kernel's scheduling is not recorded: %s\n", why.c_str());
        capturing = false;
      }
    }
    if (::write(go[1], "g", 1) != 1) {}
    ::close(go[1]);
    int exec_error = 0;
    const bool exec_failed = ::read(failed[0], &exec_error, sizeof exec_error) == sizeof exec_error;
    ::close(failed[0]);
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(child, &status, capturing ? WNOHANG : 0);
      if (r == child || (r < 0 && errno != EINTR)) break;
      if (capturing) {
        capture.read();  // the kernel's buffers emptied while the program runs
        ::poll(nullptr, 0, 20);
      }
    }
    ::sigaction(SIGINT, &old_int, nullptr);
    if (capturing) capture.off();
    if (exec_failed) {
      std::fprintf(stderr, "tinescope: cannot run %s: %s\n", command[0].c_str(), std::strerror(exec_error));
      ::unlink(out.c_str());
      return;
    }
    const int program_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!WIFEXITED(status))
      std::fprintf(stderr, "tinescope: %s ended by signal %d (%s)\n", command[0].c_str(), WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
    if (::stat(out.c_str(), &st) != 0) {
      if (!capturing) {
        std::fprintf(stderr,
                     "tinescope: %s wrote no trace: is it linked with the recorder (libtinescope), which starts "
                     "itself from TINESCOPE_OUT?\n",
                     command[0].c_str());
        *exit_code = program_status ? program_status : 2;
        return;
      }
      std::fprintf(stderr, "tinescope: %s recorded nothing of its own: the trace holds the kernel's scheduling alone\n",
                   command[0].c_str());
      std::string why;
      if (!write_empty_trace(out, tsc, command[0], why)) {
        std::fprintf(stderr, "tinescope: %s\n", why.c_str());
        return;
      }
    }
    if (capturing) {
      import::AppendResult r;
      std::string why;
      if (!import::append_kernel_sched(out, capture.events, capture.lost, sched == "all" ? 0 : int32_t(child), r, why)) {
        std::fprintf(stderr, "tinescope: the kernel's scheduling could not be added: %s\n", why.c_str());
        *exit_code = program_status ? program_status : 2;
        return;
      }
      std::printf("%s: the kernel's scheduling (%s clock): %llu switches, %llu wakeups, %llu migrations; %llu threads "
                  "on %llu CPUs; %llu events lost\n",
                  out.c_str(), capture.clock().c_str(), (unsigned long long)r.switches, (unsigned long long)r.wakeups,
                  (unsigned long long)r.migrations, (unsigned long long)r.threads, (unsigned long long)r.cpus,
                  (unsigned long long)r.lost);
    }
    *exit_code = program_status;
  });
}

}  // namespace tinescope::app
