#include "flow_table.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tinescope::index {

FlowTable::~FlowTable() {
  if (base_) ::munmap(base_, kReserve);
  if (fd_ >= 0) ::close(fd_);
}

bool FlowTable::open(const std::string& near, std::string& error) {
  std::string path = near + ".flows." + std::to_string(::getpid());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  ::unlink(path.c_str());
  // Reserve the address space once, so the array never moves as it grows.
  void* m = ::mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    error = path + ": cannot reserve address space: " + std::strerror(errno);
    return false;
  }
  base_ = static_cast<uint8_t*>(m);
  return true;
}

bool FlowTable::push(const Flow& f) {
  if ((count_ + 1) * sizeof(Flow) > mapped_) {
    if (mapped_ + kGrow > kReserve || ::ftruncate(fd_, off_t(mapped_ + kGrow)) != 0) return false;
    void* m = ::mmap(base_ + mapped_, kGrow, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, off_t(mapped_));
    if (m == MAP_FAILED) return false;
    mapped_ += kGrow;
  }
  data()[count_++] = f;
  return true;
}

}  // namespace tinescope::index
