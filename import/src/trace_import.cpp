// `tinescope import`: what kind of file it is (by its first character, after
// gzip; a text by its first line), the unwrapping of the trace viewer's HTML,
// and the reading of plain ftrace text; the readers fill one model, which
// writes the trace.
#include "tinescope/import/trace_import.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <thread>
#include <vector>

#include "import_model.hpp"
#include "tinescope/import/kernel_sched.hpp"

namespace tinescope::import {

namespace {

// A file mapped for reading, start to end (data null where it cannot be).
struct MappedFile {
  const char* data = nullptr;
  size_t size = 0;
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        ::madvise(p, size_t(st.st_size), MADV_SEQUENTIAL);  // read once, front to back
        data = static_cast<const char*>(p), size = size_t(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data) ::munmap(const_cast<char*>(data), size);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
};

// gzread reads gzip and plain files alike, here on a thread of its own, a
// few buffers ahead of the reader: inflating then runs beside the parsing
// (an import has two cores, and the parser keeps one busy) instead of taking
// its turn (+11 % for a 200 MB JSON that gzip shrank 7 times).
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(gzFile f) : f_(f), reader_([this] { read_all(); }) {}
  ~GzBuf() override { stop(); }
  // Stops the reading thread: before gzclose.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (reader_.joinable()) reader_.join();
  }

 protected:
  int_type underflow() override {
    std::unique_lock lock(mu_);
    if (!current_.empty()) free_.push_back(std::move(current_)), current_.clear(), cv_.notify_all();
    cv_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) return traits_type::eof();
    current_ = std::move(full_.front());
    full_.pop_front();
    setg(current_.data(), current_.data(), current_.data() + current_.size());
    return traits_type::to_int_type(current_[0]);
  }

 private:
  static constexpr size_t kBuffer = 1 << 18, kAhead = 4;
  void read_all() {
    for (;;) {
      std::vector<char> buf;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || full_.size() < kAhead; });
        if (stop_) break;
        if (!free_.empty()) buf = std::move(free_.back()), free_.pop_back();
      }
      buf.resize(kBuffer);
      const int n = gzread(f_, buf.data(), unsigned(buf.size()));
      std::lock_guard lock(mu_);
      if (n <= 0) break;
      buf.resize(size_t(n));
      full_.push_back(std::move(buf));
      cv_.notify_all();
    }
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  gzFile f_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<char>> full_;  // read, in order
  std::vector<std::vector<char>> free_;  // taken, to be filled again
  std::vector<char> current_;            // the one the parser reads
  bool stop_ = false, done_ = false;
  std::thread reader_;  // last: it starts once the rest is there
};

// The start of a line as an error message can show it: bytes that are not
// printable ASCII as \xNN (a binary file's "line" would garble the terminal).
std::string printable_start(const std::string& line, size_t most = 80) {
  std::string out;
  for (size_t i = 0; i < line.size() && out.size() < most; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      static const char* const kHex = "0123456789abcdef";
      out += "\\x", out += kHex[c >> 4], out += kHex[c & 15];
    }
  }
  return out;
}

// Whether a file starts with gzip's magic.
bool is_gzip(const std::string& path) {
  unsigned char magic[2] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  const bool gz = f && std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (f) std::fclose(f);
  return gz;
}

// ftrace text, or a Grasp script: told apart by the first line that is not
// a comment (a Grasp command's first word, docs/IMPORT.md).
bool read_text(std::istream& in, const std::string& name, ImportModel& m, std::string& error, const char*& recorder) {
  FtraceReader ftrace(m);
  GraspReader grasp(m);
  enum { Unknown, Ftrace, Grasp } kind = Unknown;
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty() && line[0] != '#') first = printable_start(line);
    if (kind == Unknown && !first.empty()) kind = GraspReader::is_grasp(line) ? Grasp : Ftrace;
    if (kind == Grasp) grasp.line(line);
    else ftrace.line(line);
  }
  if (kind == Grasp) {
    grasp.finish();
    recorder = "tinescope import (Grasp trace)";
    m.trace_process = name;  // (its lanes' groups, Processors and Tasks, are no process of it)
    if (grasp.events() > 0) return true;
    error = name + ": a Grasp trace without events (no plot or bufferplot command tinescope reads)";
    return false;
  }
  ftrace.finish();
  recorder = "tinescope import (ftrace text)";
  if (ftrace.events() == 0) {
    error = name + ": not a trace tinescope can import: neither Perfetto, JSON, ftrace text nor a Grasp trace" +
            (first.empty() ? std::string(" (no events)") : " (first line: \"" + first + "\")");
    return false;
  }
  return true;
}

}  // namespace

bool read_trace_html(std::istream& in, const std::string& name, ImportModel& m, std::string& error) {
  FtraceReader ftrace(m);
  enum { Outside, JsString, Block } where = Outside;
  std::string line, pending, json;  // pending: the ftrace line being unescaped
  bool block_is_json = false, block_started = false, found = false;
  uint64_t line_no = 0;
  // A piece of the JavaScript string; false at its closing quote.
  auto js_piece = [&](std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c == '"') {
        if (!pending.empty()) ftrace.line(pending), pending.clear();
        return false;
      }
      if (c != '\\') {
        pending += c;
        continue;
      }
      if (++i == s.size()) break;  // a backslash ending the line: the string goes on
      c = s[i];
      if (c == 'n') {
        ftrace.line(pending), pending.clear();
      } else {
        pending += c == 't' ? '\t' : c;  // \" \\ \' and the rest as themselves
      }
    }
    return true;
  };
  auto end_block = [&] {
    if (block_is_json) {
      std::istringstream text(json);
      if (!read_chrome_json(text, name + " (a trace-data block ending at line " + std::to_string(line_no) + ")", m,
                            error))
        return false;
    }
    json.clear(), block_is_json = block_started = false;
    return true;
  };
  auto block_line = [&](std::string_view s) {
    if (!block_started) {
      size_t at = s.find_first_not_of(" \t\r");
      if (at == std::string_view::npos) return;
      block_started = true;
      block_is_json = s[at] == '{' || s[at] == '[';
    }
    if (block_is_json) json.append(s).push_back('\n');
    else ftrace.line(s);
  };
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view s = line;
    if (where == Outside) {
      static constexpr std::string_view kJs = "linuxPerfData = \"", kBlock = "<script class=\"trace-data\"";
      if (size_t at = s.find(kJs); at != std::string_view::npos) {
        found = true;
        where = js_piece(s.substr(at + kJs.size())) ? JsString : Outside;
      } else if (size_t at2 = s.find(kBlock); at2 != std::string_view::npos) {
        found = true;
        size_t gt = s.find('>', at2);
        where = Block;
        s = gt == std::string_view::npos ? std::string_view() : s.substr(gt + 1);
      } else {
        continue;
      }
      if (where != Block) continue;
    } else if (where == JsString) {
      if (!js_piece(s)) where = Outside;
      continue;
    }
    // In a block: up to </script>.
    size_t close = s.find("</script>");
    block_line(close == std::string_view::npos ? s : s.substr(0, close));
    if (close != std::string_view::npos) {
      where = Outside;
      if (!end_block()) return false;
    }
  }
  if (where == Block && !end_block()) return false;
  ftrace.finish();
  if (!found) {
    error = name + ": an HTML file without trace data (no linuxPerfData string, no <script class=\"trace-data\"> block)";
    return false;
  }
  return true;
}

bool import_trace(const std::string& in, const std::string& out, ImportResult& r, std::string& error) {
  // The model's large arrays map files beside the output, not memory: an
  // import's anonymous memory stays flat whatever the trace's size.
  const size_t slash = out.rfind('/');
  SpillTo spill(slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash));
  {  // trace-cmd's binary trace.dat, by its magic
    char magic[10] = {};
    FILE* f = std::fopen(in.c_str(), "rb");
    const bool dat = f && std::fread(magic, 1, sizeof magic, f) == sizeof magic && std::memcmp(magic, "\x17\x08\x44tracing", 10) == 0;
    if (f) std::fclose(f);
    if (dat) return import_trace_dat(in, out, r, error);
  }
  // Perfetto's protobuf, by its first packet (its first byte, 0x0a, is a
  // blank to the text formats' test below).
  std::string head(size_t(1) << 20, '\0');
  if (gzFile h = gzopen(in.c_str(), "rb")) {
    const int n = gzread(h, head.data(), unsigned(head.size()));
    head.resize(n > 0 ? size_t(n) : 0);
    gzclose(h);
  }
  const bool perfetto = looks_like_perfetto(head);
  std::string().swap(head);
  if (perfetto && !is_gzip(in)) {
    // Plain: read in place, mapped (each byte read from the page cache
    // where a read() copied it first: 5 % of a 1 GB import).
    if (MappedFile file(in); file.data) {
      ImportModel m(r);
      return read_perfetto(file.data, file.size, in, m, error) &&
             m.write(in, out, "tinescope import (Perfetto trace)", error);
    }
    // Else straight into the reader's window (gzread would copy each byte
    // twice more, for a reader that needs no thread beside it).
    std::filebuf file;
    if (!file.open(in, std::ios::in | std::ios::binary)) {
      error = in + ": cannot open: " + std::strerror(errno);
      return false;
    }
    std::istream stream(&file);
    ImportModel m(r);
    return read_perfetto(stream, in, m, error) && m.write(in, out, "tinescope import (Perfetto trace)", error);
  }
  gzFile gz = gzopen(in.c_str(), "rb");
  if (!gz) {
    error = in + ": cannot open: " + std::strerror(errno);
    return false;
  }
  gzbuffer(gz, 1 << 17);
  GzBuf buf(gz);
  std::istream stream(&buf);
  ImportModel m(r);
  // What it is: its first character, past white space and a UTF-8 byte order mark.
  if (!perfetto && stream.peek() == 0xEF) {
    char bom[3];
    stream.read(bom, 3);
  }
  while (!perfetto && stream.peek() != std::char_traits<char>::eof() && std::isspace(stream.peek())) stream.get();
  const int c = stream.peek();
  bool ok = false;
  const char* recorder = "";
  if (perfetto) {
    ok = read_perfetto(stream, in, m, error);
    recorder = "tinescope import (Perfetto trace)";
  } else if (c == std::char_traits<char>::eof()) {
    error = in + ": empty file";
  } else if (c == '[' || c == '{') {
    ok = read_chrome_json(stream, in, m, error);
    recorder = "tinescope import (Chrome JSON)";
  } else if (c == '<') {
    ok = read_trace_html(stream, in, m, error);
    recorder = "tinescope import (trace viewer HTML)";
  } else {
    ok = read_text(stream, in, m, error, recorder);
  }
  buf.stop();
  gzclose(gz);
  return ok && m.write(in, out, recorder, error);
}

}  // namespace tinescope::import
