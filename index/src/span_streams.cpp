#include "span_streams.hpp"

#include "chunk_walk.hpp"
#include "depth_streams.hpp"
#include "state.hpp"

namespace tinescope::index {

void add_spans(FeedletState& f, const std::vector<Item>& spans, uint64_t first_ts, uint64_t last_ts,
               PageWriter& pages, std::vector<Node>& nodes) {
  if (spans.empty()) return;
  const uint64_t key = stream_key(StreamKind::Span, 0);
  int at = f.find(key);
  if (at < 0) {
    Stream st;
    st.info.kind = StreamKind::Span;
    st.info.feedlet = f.id;
    st.info.key = 0;
    st.info.leaf_shift = choose_leaf_shift(spans.size(), last_ts - first_ts, kSpanLeafItems);
    at = int(f.streams.size());
    f.insert(key, uint32_t(at));
    f.streams.push_back(std::move(st));
  }
  Stream& st = f.streams[size_t(at)];
  // Folded as a depth's items are, so each bucket names its longest item.
  nodes.clear();
  for (const Item& it : spans) fold_depth_item(nodes, it, st.info.leaf_shift);
  for (const Node& n : nodes) st.add_node(n, pages);
}

}  // namespace tinescope::index
