#include "sim/fleet/prefix_index.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvfleet::sim {

namespace {

// How many leading hashes of `a` and `b` agree, knowing a[0] == b[0]. Chained hashes agree on a
// prefix and differ everywhere after it, so a binary search finds where.
std::size_t agree(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (a[n - 1] == b[n - 1]) return n;
  std::size_t lo = 1, hi = n - 1;  // a[lo - 1] == b[lo - 1]; a[hi] != b[hi]
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (a[mid] == b[mid])
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

std::size_t PoolPrefixIndex::walk(std::span<const std::uint64_t> hashes,
                                  std::vector<Step>& path) const {
  path.clear();
  std::size_t d = 0;
  while (d < hashes.size()) {
    const auto it = head_.find(hashes[d]);
    if (it == head_.end()) break;
    const Edge& e = edges_[it->second];
    if (e.depth != d) break;  // only a 64-bit collision puts a hash at another depth
    const std::size_t k = agree(e.h, hashes.subspan(d));
    path.push_back({it->second, static_cast<std::uint32_t>(k)});
    d += k;  // the next edge, if any, hangs at offset k of this one (or continues it)
  }
  return d;
}

void PoolPrefixIndex::match(std::span<const std::uint64_t> hashes, std::size_t replicas,
                            std::vector<std::size_t>& matched) const {
  matched.assign(replicas, 0);
  walk(hashes, match_path_);
  match_shape_ = shape_;
  match_hashes_.assign(hashes.begin(), hashes.end());
  for (const Step& s : match_path_) {
    const Edge& e = edges_[s.edge];
    // A holder of this edge holds the whole path above it (its set is closed under prefixes).
    for (const Holder& h : e.holders)
      if (h.replica < replicas) matched[h.replica] = e.depth + std::min(h.len, s.shared);
  }
}

PoolPrefixIndex::Holder* PoolPrefixIndex::holder(std::uint32_t edge, std::size_t replica) {
  for (Holder& h : edges_[edge].holders)
    if (h.replica == replica) return &h;
  return nullptr;
}

namespace {

// A free slot of `items` (one given back earlier, or a new one) for an edge or a run.
template <class T>
std::uint32_t take_slot(std::vector<T>& items, std::vector<std::uint32_t>& free, const char* what) {
  if (!free.empty()) {
    const std::uint32_t i = free.back();
    free.pop_back();
    return i;
  }
  if (items.size() >= UINT32_MAX)
    throw std::length_error(std::string("router index: too many ") + what);
  items.emplace_back();
  return static_cast<std::uint32_t>(items.size() - 1);
}

}  // namespace

std::uint32_t PoolPrefixIndex::new_edge() { return take_slot(edges_, free_edges_, "edges"); }

std::uint32_t PoolPrefixIndex::new_run() { return take_slot(runs_, free_runs_, "runs"); }

void PoolPrefixIndex::remove_holder(std::uint32_t edge, std::size_t replica) {
  Edge& e = edges_[edge];
  for (std::size_t i = 0; i < e.holders.size(); ++i)
    if (e.holders[i].replica == replica) {
      if (i + 1 != e.holders.size()) std::swap(e.holders[i], e.holders.back());
      e.holders.pop_back();
      break;
    }
  if (e.holders.empty()) {
    // Held by nobody: neither is anything below it (every set is closed under prefixes).
    head_.erase(e.h.front());
    ++shape_;
    std::vector<std::uint64_t>().swap(e.h);  // an edge's hashes can be many: give them back
    e.parent = kNil;
    free_edges_.push_back(edge);
    return;
  }
  trim(edge);
}

void PoolPrefixIndex::trim(std::uint32_t edge) {
  Edge& e = edges_[edge];
  std::uint32_t held = 0;
  for (const Holder& h : e.holders) held = std::max(held, h.len);
  // Nothing hangs past `held` either: a child's holders hold the edge up to where it hangs.
  if (held > 0 && 2 * static_cast<std::size_t>(held) < e.h.size()) {
    ++shape_;
    e.h.resize(held);
    e.h.shrink_to_fit();
  }
}

void PoolPrefixIndex::compact_queue(std::size_t replica) {
  Rep& rep = reps_[replica];
  std::size_t j = 0;
  for (std::size_t i = rep.head; i < rep.queue.size(); ++i) {
    const std::uint32_t r = rep.queue[i];
    if (runs_[r].hi <= runs_[r].lo)
      free_runs_.push_back(r);
    else
      rep.queue[j++] = r;
  }
  rep.queue.resize(j);
  rep.head = 0;
  rep.dead = 0;
}

std::size_t PoolPrefixIndex::evict(std::size_t replica, std::size_t n,
                                   const std::vector<Step>& path, std::size_t& on_path) {
  Rep& rep = reps_[replica];
  std::size_t done = 0;
  while (done < n && rep.head < rep.queue.size()) {
    const std::uint32_t r = rep.queue[rep.head];
    if (runs_[r].hi <= runs_[r].lo) {  // taken over entirely by later prompts
      --rep.dead;
      free_runs_.push_back(r);
      ++rep.head;
      continue;
    }
    while (done < n && runs_[r].hi > runs_[r].lo) {
      Run& run = runs_[r];
      const std::uint32_t edge = run.edge;
      Edge& e = edges_[edge];
      // The run's depths in this edge, from its deepest up: offsets [first, run.off].
      const std::uint32_t first = run.lo > e.depth ? run.lo - e.depth : 0;
      const std::uint32_t take =
          static_cast<std::uint32_t>(std::min<std::size_t>(run.off - first + 1, n - done));
      const std::uint32_t left = run.off + 1 - take;  // what the replica keeps of this edge
      for (const Step& s : path)
        if (s.edge == edge) {
          on_path +=
              std::min(run.off + 1, s.shared) > left ? std::min(run.off + 1, s.shared) - left : 0;
          break;
        }
      run.hi -= take;
      done += take;
      const std::uint32_t parent = e.parent, parent_off = e.parent_off;
      if (left > 0) {
        Holder* h = holder(edge, replica);
        if (h == nullptr) throw std::logic_error("router index: a run's edge lost its holder");
        h->len = left;
        while (h->pieces.back().start >= left) h->pieces.pop_back();
        run.off = left - 1;
        if (2 * static_cast<std::size_t>(left) < e.h.size()) trim(edge);
      } else {
        remove_holder(edge, replica);  // may free the edge
        run.edge = parent;
        run.off = parent_off - 1;  // unused once the run is empty (hi == lo)
      }
    }
    if (runs_[r].hi <= runs_[r].lo) {
      free_runs_.push_back(r);
      ++rep.head;
    }
  }
  if (rep.head > 64 && rep.head * 2 > rep.queue.size()) compact_queue(replica);
  rep.size -= done;
  return done;
}

void PoolPrefixIndex::take_over(Holder& h, std::uint32_t depth, std::uint32_t c, std::uint32_t r,
                                std::size_t replica) {
  // Runs that owned offsets below c lose them (touched: now the new run's).
  pieces_.clear();
  pieces_.push_back(Piece{0, r});
  for (std::size_t i = 0; i < h.pieces.size(); ++i) {
    const Piece p = h.pieces[i];
    const std::uint32_t end = i + 1 < h.pieces.size() ? h.pieces[i + 1].start : h.len;
    if (p.start < c) {
      Run& old = runs_[p.run];
      const bool live = old.lo < old.hi;
      old.lo = std::max(old.lo, depth + std::min(end, c));
      if (live && old.lo >= old.hi) ++reps_[replica].dead;
      if (end > c) pieces_.push_back(Piece{c, p.run});
    } else {
      pieces_.push_back(p);
    }
  }
  h.pieces.assign(pieces_.begin(), pieces_.end());
  h.len = std::max(h.len, c);
}

void PoolPrefixIndex::add_tail(std::span<const std::uint64_t> hashes, std::size_t reached,
                               std::size_t hi, std::uint32_t r, std::size_t replica) {
  // Only a 64-bit collision (two prefixes, one hash) finds the hash at another depth.
  if (head_.contains(hashes[reached]))
    throw std::runtime_error("router index: two prompt prefixes share a 64-bit block hash");
  const std::uint32_t e = new_edge();
  Edge& edge = edges_[e];
  edge.h.assign(hashes.begin() + static_cast<std::ptrdiff_t>(reached),
                hashes.begin() + static_cast<std::ptrdiff_t>(hi));
  edge.parent = path_.empty() ? kNil : path_.back().edge;
  edge.parent_off = path_.empty() ? 0 : path_.back().shared;
  edge.depth = static_cast<std::uint32_t>(reached);
  edge.holders.clear();
  edge.holders.push_back(Holder{static_cast<std::uint32_t>(replica),
                                static_cast<std::uint32_t>(hi - reached),
                                {Piece{0, r}}});
  head_.emplace(hashes[reached], e);
  ++shape_;
  runs_[r].edge = e;
  runs_[r].off = static_cast<std::uint32_t>(hi - reached - 1);
}

void PoolPrefixIndex::record(std::size_t replica, std::span<const std::uint64_t> hashes) {
  const std::size_t m = hashes.size();
  if (m == 0) return;
  ensure_replicas(replica + 1);
  const std::size_t capacity = static_cast<std::size_t>(std::max<std::int64_t>(capacity_, 1));

  // What the replica holds of the prompt: its first j hashes.
  if (match_shape_ == shape_ &&
      std::equal(hashes.begin(), hashes.end(), match_hashes_.begin(), match_hashes_.end()))
    path_ = match_path_;  // the tree has not changed since match() walked these hashes
  else
    walk(hashes, path_);
  std::size_t reached = path_.empty() ? 0 : edges_[path_.back().edge].depth + path_.back().shared;
  const std::uint64_t shape = shape_;
  std::size_t j = 0;
  for (const Step& s : path_)
    if (const Holder* h = holder(s.edge, replica))
      j = edges_[s.edge].depth + std::min<std::size_t>(h->len, s.shared);

  // The reference touches the hashes last first: each of the m - j new ones is inserted, evicting
  // the least recent hash when full. Those evictions may reach the prompt's own held hashes
  // (their deepest first); each such hash is inserted again when its turn comes, evicting one
  // more. The evicted are the least recent hashes in order: pop until the count is reached.
  const std::size_t size0 = reps_[replica].size;
  std::size_t popped = 0, again = 0;  // evicted; of them, the prompt's own
  for (;;) {
    const std::size_t want = size0 + (m - j) + again;
    const std::size_t target = want > capacity ? want - capacity : 0;
    if (popped >= target || popped == size0) break;
    std::size_t own = 0;
    const std::size_t got = evict(replica, target - popped, path_, own);
    if (got == 0) throw std::logic_error("router index: a replica's runs hold fewer than its size");
    popped += got;
    again += own;
  }
  // Past the old hashes, the new ones go (the deepest first, the first inserted).
  const std::size_t want = size0 + (m - j) + again;
  const std::size_t extra = want > capacity + popped ? want - capacity - popped : 0;
  const std::size_t hi = m - extra;

  // The new run owns depths [0, hi): it takes over what the replica kept of the prompt.
  const std::uint32_t r = new_run();
  runs_[r] = Run{kNil, 0, 0, static_cast<std::uint32_t>(hi)};
  if (shape_ != shape) reached = walk(hashes, path_);  // evictions changed the tree
  for (const Step& s : path_) {
    const std::uint32_t depth = edges_[s.edge].depth;
    if (depth >= hi) break;
    const std::uint32_t c =
        std::min<std::uint32_t>(s.shared, static_cast<std::uint32_t>(hi) - depth);
    Holder* h = holder(s.edge, replica);
    if (h == nullptr) {
      edges_[s.edge].holders.push_back(
          Holder{static_cast<std::uint32_t>(replica), c, {Piece{0, r}}});
    } else {
      take_over(*h, depth, c, r, replica);
    }
    if (depth + c == hi) runs_[r].edge = s.edge, runs_[r].off = c - 1;
  }
  // The rest of the prompt is new to the tree: one new edge.
  if (reached < hi) add_tail(hashes, reached, hi, r, replica);
  Rep& rep = reps_[replica];
  rep.queue.push_back(r);
  rep.size = size0 + (m - j) + again - popped - extra;
  if (rep.dead > 64 && 2 * rep.dead > rep.queue.size() - rep.head) compact_queue(replica);
}

bool PoolPrefixIndex::check_consistency() const {
  std::vector<std::size_t> held(reps_.size(), 0);
  std::vector<std::size_t> owned(runs_.size(), 0);
  std::size_t live_edges = 0;
  for (std::size_t e = 0; e < edges_.size(); ++e) {
    const Edge& edge = edges_[e];
    if (edge.h.empty()) continue;
    ++live_edges;
    const auto it = head_.find(edge.h.front());
    if (it == head_.end() || it->second != e || edge.holders.empty()) return false;
    if (edge.parent != kNil) {
      const Edge& p = edges_[edge.parent];
      if (p.h.empty() || edge.parent_off == 0 || edge.parent_off > p.h.size() ||
          edge.depth != p.depth + edge.parent_off)
        return false;
    } else if (edge.depth != 0) {
      return false;
    }
    for (const Holder& h : edge.holders) {
      if (h.replica >= reps_.size() || h.len == 0 || h.len > edge.h.size()) return false;
      if (h.pieces.empty() || h.pieces.front().start != 0) return false;
      // A holder holds the path above the edge.
      if (edge.parent != kNil) {
        bool above = false;
        for (const Holder& ph : edges_[edge.parent].holders)
          above = above || (ph.replica == h.replica && ph.len >= edge.parent_off);
        if (!above) return false;
      }
      held[h.replica] += h.len;
      for (std::size_t i = 0; i < h.pieces.size(); ++i) {
        const std::uint32_t end = i + 1 < h.pieces.size() ? h.pieces[i + 1].start : h.len;
        if (h.pieces[i].start >= end || h.pieces[i].run >= runs_.size()) return false;
        const Run& run = runs_[h.pieces[i].run];
        // The run owns these depths.
        if (edge.depth + h.pieces[i].start < run.lo || edge.depth + end > run.hi) return false;
        owned[h.pieces[i].run] += end - h.pieces[i].start;
      }
    }
  }
  if (live_edges != head_.size()) return false;
  // Every run is in one queue once, or free.
  std::vector<char> seen(runs_.size(), 0);
  for (const std::uint32_t r : free_runs_) {
    if (r >= runs_.size() || seen[r]) return false;
    seen[r] = 1;
  }
  for (std::size_t x = 0; x < reps_.size(); ++x) {
    const Rep& rep = reps_[x];
    if (held[x] != rep.size) return false;
    std::size_t in_runs = 0, dead = 0;
    for (std::size_t i = rep.head; i < rep.queue.size(); ++i) {
      const std::uint32_t r = rep.queue[i];
      if (r >= runs_.size() || seen[r]) return false;
      seen[r] = 1;
      const Run& run = runs_[r];
      if (run.hi <= run.lo) {  // taken over entirely, not yet dequeued
        ++dead;
        if (owned[r] != 0) return false;
        continue;
      }
      if (owned[r] != run.hi - run.lo) return false;
      // Its deepest depth is where its cursor says.
      const Edge& e = edges_[run.edge];
      if (e.h.empty() || e.depth + run.off + 1 != run.hi) return false;
      in_runs += run.hi - run.lo;
    }
    if (in_runs != rep.size || dead != rep.dead) return false;
  }
  for (const char s : seen)
    if (!s) return false;
  return true;
}

}  // namespace kvfleet::sim
