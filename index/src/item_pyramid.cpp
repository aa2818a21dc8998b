#include "tinescope/index/item_pyramid.hpp"

#include <algorithm>

#include "pyramid.hpp"

namespace tinescope::index {

struct ItemPyramid::Impl {
  Impl(int fd, uint64_t pages_at) : fd(fd), pages(fd, pages_at) {}
  int fd;
  Stream stream;
  PageWriter pages;
};

ItemPyramid::ItemPyramid(StreamKind kind, uint64_t count, uint64_t key_span, int fd, uint64_t pages_at)
    : impl_(std::make_unique<Impl>(fd, pages_at)) {
  StreamInfo& info = impl_->stream.info;
  info.kind = kind;
  info.feedlet = UINT32_MAX;  // no feedlet: an operator made them
  info.leaf_shift = choose_leaf_shift(count, key_span);
}

ItemPyramid::~ItemPyramid() = default;

void ItemPyramid::add(const Item& it) { impl_->stream.add(it, impl_->pages); }

bool ItemPyramid::finish(uint64_t& file_end, std::string& error) {
  impl_->stream.finish(impl_->pages);
  if (!impl_->pages.flush() || !impl_->pages.error().empty()) {
    error = impl_->pages.error();
    return false;
  }
  file_end = impl_->pages.end();
  return true;
}

uint32_t ItemPyramid::leaf_shift() const { return impl_->stream.info.leaf_shift; }

uint32_t ItemPyramid::top_shift() const {
  return impl_->stream.info.leaf_shift + std::max(impl_->stream.info.levels, 1u) - 1;
}

bool ItemPyramid::answers(uint32_t shift) const {
  return shift >= impl_->stream.info.leaf_shift && !impl_->stream.levels.empty();
}

void ItemPyramid::query(uint64_t t0, uint64_t t1, uint32_t shift, const uint8_t* map, size_t map_size,
                        Buckets& out) const {
  const Stream& st = impl_->stream;
  const int fd = impl_->fd;
  query_levels(st, t0, t1, shift,
               [&](uint32_t level, size_t page, Node* nodes) { return read_page(st, level, page, map, map_size, fd, nodes); },
               out);
}

void ItemPyramid::fold_item(std::vector<Node>& nodes, const Item& it, uint32_t shift) {
  index::fold_item(nodes, it, shift);
}

}  // namespace tinescope::index
