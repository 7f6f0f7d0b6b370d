// `corral top`: a full-screen view of nodes, GPUs and queues (ncurses). It redraws when the
// event stream (GET /v1/events, held by the head) reports a change, and at least every second
// for GPU utilisation, which is an observation and never an event. `q` quits. `--once` prints
// one frame without a terminal (scripts, tests).
#include <curses.h>

#include <ostream>

#include "cli/commands.h"

namespace corral::cli {
namespace {

constexpr int64_t kRefreshMs = 1000;

void Fetch(ApiClient& api, TopSnapshot* s) {
  s->error.clear();
  auto nodes = api.CallJson("GET", "/v1/nodes");
  auto queues = api.CallJson("GET", "/v1/queues");
  if (!nodes.ok() || !queues.ok()) {
    s->error = (!nodes.ok() ? nodes.status() : queues.status()).message();
    return;
  }
  auto node_views = NodesFromAnswer(*nodes);
  auto queue_views = QueuesFromAnswer(*queues);
  if (!node_views.ok() || !queue_views.ok()) {
    s->error = (!node_views.ok() ? node_views.status() : queue_views.status()).message();
    return;
  }
  s->nodes = std::move(*node_views);
  s->queues = std::move(*queue_views);
}

// Waits up to `wait_ms` for a change after `since`; returns the revision to follow from.
uint64_t WaitForChange(ApiClient& api, uint64_t since, int64_t wait_ms) {
  auto page = ReadEvents(api, since, 100, wait_ms);
  return page.ok() ? page->revision : since;
}

void Draw(const TopSnapshot& s) {
  int rows = 0, cols = 0;
  getmaxyx(stdscr, rows, cols);
  erase();
  int y = 0;
  for (const std::string& line : RenderTop(s, cols, rows)) {
    mvaddnstr(y, 0, line.c_str(), cols);
    if (y == 0) mvchgat(0, 0, -1, A_REVERSE, 0, nullptr);
    ++y;
  }
  refresh();
}

}  // namespace

int RunTop(const std::vector<std::string>& argv, CliContext& ctx) {
  auto parsed = ParseArgs(argv, {{"once", 0, false}}, false);
  if (!parsed.ok()) return UsageError(ctx, "top", parsed.status().message());
  if (parsed->Has("help")) {
    *ctx.out << CommandUsage("top") << "\n";
    return kExitOk;
  }
  if (!parsed->positional.empty()) {
    return UsageError(ctx, "top", "unexpected argument '" + parsed->positional[0] + "'");
  }
  ApiClient api(ctx);
  TopSnapshot snap;
  snap.revision = WaitForChange(api, 0, 0);
  Fetch(api, &snap);
  if (parsed->Has("once")) {
    if (!snap.error.empty()) {
      PrintError(ctx, "top", snap.error);
      return kExitError;
    }
    for (const std::string& line : RenderTop(snap, -1, -1)) *ctx.out << line << "\n";
    return kExitOk;
  }
  if (initscr() == nullptr) {
    PrintError(ctx, "top", "cannot start the terminal (TERM unset?); try --once");
    return kExitError;
  }
  cbreak();
  noecho();
  nodelay(stdscr, TRUE);
  curs_set(0);
  for (;;) {
    Draw(snap);
    int key = getch();
    if (key == 'q' || key == 'Q') break;
    snap.revision = WaitForChange(api, snap.revision, kRefreshMs);
    Fetch(api, &snap);
  }
  endwin();
  return kExitOk;
}

}  // namespace corral::cli
