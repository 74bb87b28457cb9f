// http_engines_bench: the master's HTTP engine candidates side by side (docs/design/0014).
//
// cpp-httplib's server (a thread per connection from a pool, what cohort-master served with
// before) against libmicrohttpd's, with a pool of epoll threads and with a thread per
// connection (what cohort-master serves with now), each with clients that open a connection per
// request and with keep-alive clients (TCP_NODELAY: a request is written as headers then body,
// and without it Nagle's algorithm holds the body back for the server's delayed ACK, ~40 ms).
// Each server runs in a child process, so its CPU time is its own; every request does
// --work-us of busy work in the server, standing in for a handler. Prints a table with each
// engine's HTTP overhead per request relative to cpp-httplib's.
//
//   build/bench/http_engines_bench --clients 200 --rate 12 --seconds 15
#include <httplib.h>
#include <microhttpd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/proc_stat.h"
#include "common/command_line.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int clients = 200;
  double rate = 12;  // requests per second per client
  double seconds = 15;
  int work_us = 200;
  int mhd_threads = 4;
};

void Work(int us) {
  const auto end = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < end) {
  }
}

constexpr char kAnswer[] = "{\"ok\":true}";

// cpp-httplib as cohort-master runs it: a pool of 1024 threads, a listen queue of 4096.
[[noreturn]] void ServeHttplib(int port, const Options& o) {
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(1024); };
  server.Post("/x", [&o](const httplib::Request&, httplib::Response& res) {
    Work(o.work_us);
    res.set_content(kAnswer, "application/json");
  });
  int bound = -1;
  server.set_socket_options([&bound](socket_t sock) { bound = sock; });
  if (!server.bind_to_port("127.0.0.1", port)) _exit(2);
  ::listen(bound, 4096);
  server.listen_after_bind();
  _exit(0);
}

struct Upload {
  std::string body;
};

MHD_Result Access(void* cls, MHD_Connection* connection, const char*, const char*, const char*,
                  const char* data, size_t* size, void** state) {
  if (*state == nullptr) {  // the headers: the body (if any) comes in the next calls
    *state = new Upload;
    return MHD_YES;
  }
  auto* upload = static_cast<Upload*>(*state);
  if (*size != 0) {
    upload->body.append(data, *size);
    *size = 0;
    return MHD_YES;
  }
  Work(static_cast<const Options*>(cls)->work_us);
  MHD_Response* response = MHD_create_response_from_buffer(
      sizeof(kAnswer) - 1, const_cast<char*>(kAnswer), MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(response, "Content-Type", "application/json");
  const MHD_Result queued = MHD_queue_response(connection, 200, response);
  MHD_destroy_response(response);
  return queued;
}

void Completed(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
  delete static_cast<Upload*>(*state);
  *state = nullptr;
}

// libmicrohttpd with a pool of epoll threads, or (`per_connection`) a thread per connection
// blocked in poll() between requests.
[[noreturn]] void ServeMhd(int port, const Options& o, bool per_connection) {
  const unsigned flags = per_connection ? MHD_USE_THREAD_PER_CONNECTION |
                                              MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL
                                        : MHD_USE_EPOLL_INTERNAL_THREAD;
  const unsigned pool = per_connection ? 0u : static_cast<unsigned>(o.mhd_threads);
  MHD_Daemon* daemon = MHD_start_daemon(
      flags | MHD_USE_ERROR_LOG, static_cast<uint16_t>(port), nullptr, nullptr, &Access,
      const_cast<Options*>(&o), MHD_OPTION_THREAD_POOL_SIZE, pool, MHD_OPTION_CONNECTION_LIMIT,
      20000u,
      MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
      MHD_OPTION_NOTIFY_COMPLETED, &Completed, nullptr, MHD_OPTION_END);
  if (daemon == nullptr) _exit(2);
  for (;;) pause();
}

struct Load {
  std::vector<double> latencies_ms;  // after the first 3 s
  int errors = 0;
};

Load RunClients(int port, bool keep_alive, const Options& o) {
  std::mutex mu;
  Load load;
  const std::string body = "{\"lines\":[\"" + std::string(300, 'a') + "\"]}";
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      httplib::Client reused("127.0.0.1", port);
      reused.set_keep_alive(true);
      reused.set_tcp_nodelay(true);
      const auto period = std::chrono::microseconds(static_cast<int64_t>(1e6 / o.rate));
      auto next = start + period * i / o.clients;
      std::vector<double> mine;
      int errors = 0;
      while (Clock::now() - start < std::chrono::duration<double>(o.seconds)) {
        std::this_thread::sleep_until(next);
        next += period;
        const auto sent = Clock::now();
        httplib::Result r = keep_alive ? reused.Post("/x", body, "application/json")
                                       : httplib::Client("127.0.0.1", port)
                                             .Post("/x", body, "application/json");
        if (!r || r->status != 200) {
          ++errors;
          continue;
        }
        if (sent - start > std::chrono::seconds(3)) {
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      load.latencies_ms.insert(load.latencies_ms.end(), mine.begin(), mine.end());
      load.errors += errors;
    });
  }
  for (std::thread& t : threads) t.join();
  std::sort(load.latencies_ms.begin(), load.latencies_ms.end());
  return load;
}

struct Row {
  std::string name;
  Load load;
  double server_cpu = 0, steal = 0, requests = 0;  // requests: offered, the untimed first 3 s too
};

// Runs one engine in a child process under the clients' load; its row of the table. Fails
// when the server did not start (the port taken, libmicrohttpd refusing its options).
std::optional<Row> RunOne(const std::string& engine, bool keep_alive, int port, const Options& o) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (engine == "httplib") ServeHttplib(port, o);
    ServeMhd(port, o, engine == "mhd-per-connection");
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  int status = 0;
  if (::waitpid(child, &status, WNOHANG) == child) {
    std::fprintf(stderr,
                 "the %s server on port %d exited at start (status %d): is the port free?\n",
                 engine.c_str(), port, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return std::nullopt;
  }
  const std::optional<cohort::bench::MachineCpu> before = cohort::bench::ReadMachineCpu();
  Row row{engine + (keep_alive ? ", keep-alive" : ", a connection per request")};
  row.load = RunClients(port, keep_alive, o);
  const std::optional<cohort::bench::MachineCpu> after = cohort::bench::ReadMachineCpu();
  row.server_cpu = cohort::bench::ProcessCpuSeconds(child).value_or(0);
  if (before && after) row.steal = after->steal - before->steal;
  row.requests = o.rate * o.clients * o.seconds;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return row;
}

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("cpp-httplib vs libmicrohttpd serving small JSON posts (docs/design/0014)");
  app.add_option("--clients", o.clients, "Client threads")->capture_default_str();
  app.add_option("--rate", o.rate, "Requests per second per client")->capture_default_str();
  app.add_option("--seconds", o.seconds, "Seconds per engine (the first 3 are not timed)")
      ->capture_default_str();
  app.add_option("--work-us", o.work_us, "Busy work per request in the server, microseconds")
      ->capture_default_str();
  app.add_option("--mhd-threads", o.mhd_threads, "libmicrohttpd's pool")->capture_default_str();
  if (std::optional<int> exit = cohort::ParseCommandLine(app, "http_engines_bench", argc, argv)) {
    return *exit;
  }
  const int base_port = 20000 + static_cast<int>(::getpid() % 20000);
  std::vector<Row> rows;
  int n = 0;
  for (const char* engine : {"httplib", "mhd", "mhd-per-connection"}) {
    for (bool keep_alive : {false, true}) {
      std::printf("%s, keep-alive %s: %d clients x %.0f/s for %.0f s...\n", engine,
                  keep_alive ? "on" : "off", o.clients, o.rate, o.seconds);
      std::fflush(stdout);
      std::optional<Row> row = RunOne(engine, keep_alive, base_port + n++, o);
      if (!row) return 1;
      rows.push_back(*std::move(row));
    }
  }
  const double work = o.work_us * 1e-6;
  const double base = rows[0].server_cpu / rows[0].requests - work;
  std::printf("\n%-40s %8s %6s %8s %8s %8s %12s %14s %8s %7s\n", "engine", "req/s", "errors",
              "p50 ms", "p99 ms", "max ms", "server CPU s", "overhead/req", "vs first", "steal s");
  for (const Row& r : rows) {
    const double overhead = r.server_cpu / r.requests - work;
    std::printf("%-40s %8.0f %6d %8.2f %8.2f %8.2f %12.1f %11.0f us %7.2fx %7.1f\n",
                r.name.c_str(), r.load.latencies_ms.size() / (o.seconds - 3), r.load.errors,
                Quantile(r.load.latencies_ms, 0.5), Quantile(r.load.latencies_ms, 0.99),
                r.load.latencies_ms.empty() ? 0 : r.load.latencies_ms.back(), r.server_cpu,
                overhead * 1e6, overhead / base, r.steal);
  }
  std::printf(
      "(overhead/req: the server's CPU per request less the --work-us it was asked to do)\n");
  return 0;
}
