#include "models/translation_data.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "mtf/errors.h"

namespace mtf::models {

std::vector<EncodedPair> encode_pairs(const Vocabulary& vocabulary,
                                      const std::vector<SentencePair>& pairs, int64_t max_source,
                                      int64_t max_target, bool drop_long, int64_t* dropped) {
  if (max_source < 1 || max_target < 1)
    throw ValueError("encode_pairs: lengths must be at least 1 (room for the end id)");
  std::vector<EncodedPair> out;
  int64_t n_dropped = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    EncodedPair e;
    e.source = vocabulary.encode(pairs[i].source);
    e.target = vocabulary.encode(pairs[i].target);
    e.source.push_back(Vocabulary::kEos);
    e.target.push_back(Vocabulary::kEos);
    e.index = i;
    const bool long_pair = static_cast<int64_t>(e.source.size()) > max_source ||
                           static_cast<int64_t>(e.target.size()) > max_target;
    if (long_pair && drop_long) {
      ++n_dropped;
      continue;
    }
    for (auto [ids, most] : {std::pair(&e.source, max_source), {&e.target, max_target}}) {
      if (static_cast<int64_t>(ids->size()) > most) {
        ids->resize(most);
        ids->back() = Vocabulary::kEos;
      }
    }
    out.push_back(std::move(e));
  }
  if (dropped) *dropped = n_dropped;
  return out;
}

TranslationBatcher::TranslationBatcher(std::vector<EncodedPair> pairs, const EncDecConfig& config,
                                       uint64_t seed)
    : pairs_(std::move(pairs)), config_(config), seed_(seed) {
  if (pairs_.empty()) throw ValueError("TranslationBatcher: no pairs to train on");
  for (const EncodedPair& p : pairs_) {
    if (static_cast<int64_t>(p.source.size()) > config.input_length ||
        static_cast<int64_t>(p.target.size()) > config.target_length) {
      throw ValueError("TranslationBatcher: a pair is longer than the model's lengths (" +
                       std::to_string(config.input_length) + ", " +
                       std::to_string(config.target_length) + "); encode with them");
    }
  }
  reshuffle();
}

void TranslationBatcher::reshuffle() {
  order_.resize(pairs_.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::mt19937_64 rng(seed_ * 1000003u + static_cast<uint64_t>(epoch_));
  // Fisher-Yates with our own draws: the same order on every standard library.
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng() % i]);
}

Feeds TranslationBatcher::next(const TransformerEncDec& model) {
  const int64_t B = model.batch.size, LI = config_.input_length, LT = config_.target_length;
  HostTensor in = HostTensor::zeros(model.inputs.shape(), int32);
  HostTensor tg = HostTensor::zeros(model.targets.shape(), int32);
  // Four buffers of their own (a HostTensor copy shares its buffer).
  HostTensor in_seg = HostTensor::zeros(model.inputs.shape(), int32);
  HostTensor in_pos = HostTensor::zeros(model.inputs.shape(), int32);
  HostTensor tg_seg = HostTensor::zeros(model.targets.shape(), int32);
  HostTensor tg_pos = HostTensor::zeros(model.targets.shape(), int32);
  last_tokens_ = last_pairs_ = 0;
  // Writes pair p into `row` after its used positions, as `segment`.
  std::vector<int64_t> used_in(B, 0), used_tg(B, 0);
  std::vector<int32_t> segments(B, 0);
  auto place = [&](int64_t row, const EncodedPair& p) {
    const int32_t segment = ++segments[row];
    const int64_t ui = used_in[row], ut = used_tg[row];
    for (size_t i = 0; i < p.source.size(); ++i) {
      in.data<int32_t>()[row * LI + ui + static_cast<int64_t>(i)] = p.source[i];
      in_seg.data<int32_t>()[row * LI + ui + static_cast<int64_t>(i)] = segment;
      in_pos.data<int32_t>()[row * LI + ui + static_cast<int64_t>(i)] = static_cast<int32_t>(i);
    }
    for (size_t i = 0; i < p.target.size(); ++i) {
      tg.data<int32_t>()[row * LT + ut + static_cast<int64_t>(i)] = p.target[i];
      tg_seg.data<int32_t>()[row * LT + ut + static_cast<int64_t>(i)] = segment;
      tg_pos.data<int32_t>()[row * LT + ut + static_cast<int64_t>(i)] = static_cast<int32_t>(i);
    }
    used_in[row] += static_cast<int64_t>(p.source.size());
    used_tg[row] += static_cast<int64_t>(p.target.size());
    last_tokens_ += static_cast<int64_t>(p.target.size());
    ++last_pairs_;
    ++at_;
  };
  auto next_pair = [&]() -> const EncodedPair& {
    if (at_ == order_.size()) {
      ++epoch_;
      at_ = 0;
      reshuffle();
    }
    return pairs_[order_[at_]];
  };
  if (!config_.packed) {
    for (int64_t row = 0; row < B; ++row) place(row, next_pair());
  } else {
    // First fit over the batch's rows, in the shuffled order: each pair goes
    // into the first row with room for both its sides; the first pair that
    // fits no row (every row holds a pair by then) starts the next batch.
    for (;;) {
      const EncodedPair& p = next_pair();
      const int64_t ns = static_cast<int64_t>(p.source.size()),
                    nt = static_cast<int64_t>(p.target.size());
      int64_t row = 0;
      while (row < B && (used_in[row] + ns > LI || used_tg[row] + nt > LT)) ++row;
      if (row == B) break;
      place(row, p);
    }
  }
  Feeds feeds = {{model.inputs, in}, {model.targets, tg}};
  if (config_.packed) {
    feeds.emplace_back(model.inputs_segmentation, in_seg);
    feeds.emplace_back(model.inputs_position, in_pos);
    feeds.emplace_back(model.targets_segmentation, tg_seg);
    feeds.emplace_back(model.targets_position, tg_pos);
  }
  return feeds;
}

std::string TranslationBatcher::state() const {
  return std::to_string(epoch_) + ":" + std::to_string(at_);
}

void TranslationBatcher::restore(const std::string& state) {
  const size_t colon = state.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    const int64_t epoch = std::stoll(state.substr(0, colon));
    const size_t at = std::stoull(state.substr(colon + 1));
    if (epoch < 0 || at > pairs_.size()) throw std::out_of_range("position");
    epoch_ = epoch;
    reshuffle();
    at_ = at;
  } catch (const std::logic_error&) {
    throw ValueError("TranslationBatcher: \"" + state +
                     "\" is not a data position this batcher wrote (epoch:pair)");
  }
}

namespace {

// Rows [first, first + batch) of `pairs` as unpacked feeds; missing rows
// are padding.
Feeds unpacked_feeds(const TransformerEncDec& model, const std::vector<EncodedPair>& pairs,
                     size_t first) {
  const EncDecConfig& c = model.config();
  HostTensor in = HostTensor::zeros(model.inputs.shape(), int32);
  HostTensor tg = HostTensor::zeros(model.targets.shape(), int32);
  for (int64_t row = 0; row < model.batch.size && first + row < pairs.size(); ++row) {
    const EncodedPair& p = pairs[first + row];
    for (size_t i = 0; i < p.source.size() && static_cast<int64_t>(i) < c.input_length; ++i)
      in.data<int32_t>()[row * c.input_length + i] = p.source[i];
    for (size_t i = 0; i < p.target.size() && static_cast<int64_t>(i) < c.target_length; ++i)
      tg.data<int32_t>()[row * c.target_length + i] = p.target[i];
  }
  return model.feeds(in, tg);
}

}  // namespace

double mean_token_loss(TransformerEncDec& model, Session& session,
                       const std::vector<EncodedPair>& pairs) {
  double sum = 0, tokens = 0;
  for (size_t first = 0; first < pairs.size(); first += static_cast<size_t>(model.batch.size)) {
    const auto out =
        session.run({model.eval_loss_sum, model.eval_tokens}, unpacked_feeds(model, pairs, first));
    sum += out[0].to_floats()[0];
    tokens += out[1].to_floats()[0];
  }
  return tokens > 0 ? sum / tokens : 0.0;
}

std::vector<std::string> translate_pairs(EncDecDecoder& decoder, Session& session,
                                         const Vocabulary& vocabulary,
                                         const std::vector<EncodedPair>& pairs,
                                         const BeamOptions& options) {
  std::vector<std::vector<int32_t>> sources;
  for (const EncodedPair& p : pairs) sources.push_back(p.source);
  std::vector<std::string> out;
  for (const auto& ids : translate(decoder, session, sources, options))
    out.push_back(vocabulary.decode(ids));
  return out;
}

}  // namespace mtf::models
