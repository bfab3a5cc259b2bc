#include "models/parallel_corpus.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>

#include "models/fnv1a.h"
#include "mtf/errors.h"

#ifdef MTF_HAVE_SWORD
#include <swlog.h>
#include <swmgr.h>
#include <swmodule.h>
#endif

namespace mtf::models {
namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\f\v") == std::string::npos; }

// A letter or digit for joining purposes: ASCII alphanumerics and every
// byte of a multi-byte UTF-8 character (letters such as "é").
bool word_byte(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || u >= 0x80;
}

// Appends code point cp as UTF-8.
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// Decodes the entity starting at s[i] ('&') into out; returns the index
// after it, or i + 1 (the '&' kept) when it is not one.
size_t decode_entity(const std::string& s, size_t i, std::string& out) {
  const size_t end = s.find(';', i);
  if (end == std::string::npos || end - i > 10) {
    out += '&';
    return i + 1;
  }
  const std::string name = s.substr(i + 1, end - i - 1);
  static const std::map<std::string, std::string> named = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}, {"nbsp", " "}};
  if (auto it = named.find(name); it != named.end()) {
    out += it->second;
  } else if (name.size() > 1 && name[0] == '#') {
    const bool hex = name[1] == 'x' || name[1] == 'X';
    char* stop = nullptr;
    const unsigned long cp = std::strtoul(name.c_str() + (hex ? 2 : 1), &stop, hex ? 16 : 10);
    if (*stop != '\0' || cp == 0 || cp > 0x10ffff) {
      out += '&';
      return i + 1;
    }
    append_utf8(out, static_cast<uint32_t>(cp));
  } else {
    out += '&';
    return i + 1;
  }
  return end + 1;
}

// The element name of the tag s[i..close], and whether it opens, closes or
// is empty ("<x/>").
struct Tag {
  std::string name;
  bool closing = false, empty = false;
};

Tag parse_tag(const std::string& s, size_t open, size_t close) {
  Tag t;
  size_t i = open + 1;
  if (i < close && s[i] == '/') {
    t.closing = true;
    ++i;
  }
  size_t j = i;
  while (j < close && s[j] != ' ' && s[j] != '/' && s[j] != '\t' && s[j] != '\n') ++j;
  t.name = s.substr(i, j - i);
  t.empty = close > open && s[close - 1] == '/';
  return t;
}

}  // namespace

std::string osis_to_plain_text(const std::string& osis) {
  std::string text;
  int dropped = 0;          // depth inside <note> or <title>
  bool join_check = false;  // a dropped element just ended: mind the join
  for (size_t i = 0; i < osis.size();) {
    const char c = osis[i];
    if (c == '<') {
      const size_t close = osis.find('>', i);
      if (close == std::string::npos) break;  // a broken tag ends the text
      const Tag tag = parse_tag(osis, i, close);
      const bool dropping = tag.name == "note" || tag.name == "title";
      if (dropping && !tag.empty) {
        if (tag.closing) {
          dropped = std::max(0, dropped - 1);
          if (dropped == 0) join_check = true;
        } else {
          ++dropped;
        }
      }
      i = close + 1;
      continue;
    }
    if (dropped > 0) {
      ++i;
      continue;
    }
    if (join_check) {
      // "God<note>…</note>created": keep the words apart.
      if (!text.empty() && word_byte(text.back()) && word_byte(c)) text += ' ';
      join_check = false;
    }
    if (c == '&') {
      i = decode_entity(osis, i, text);
      continue;
    }
    text += c;
    ++i;
  }
  // Whitespace runs to one space, ends trimmed.
  std::string out;
  bool space = false;
  for (char ch : text) {
    const bool ws = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
    if (ws) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

std::vector<SentencePair> read_tsv_pairs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot open " + path + " (a parallel corpus: source<TAB>target a line)");
  std::vector<SentencePair> pairs;
  std::string line;
  int64_t number = 0;
  auto bad = [&](const std::string& what) {
    return ValueError(path + ":" + std::to_string(number) + ": " + what +
                      "; each line must be source<TAB>target, both sides non-empty");
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) throw bad("empty line");
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw bad("no tab");
    if (line.find('\t', tab + 1) != std::string::npos) throw bad("more than one tab");
    SentencePair p{path + ":" + std::to_string(number), line.substr(0, tab), line.substr(tab + 1)};
    if (blank(p.source)) throw bad("the source side is empty");
    if (blank(p.target)) throw bad("the target side is empty");
    pairs.push_back(std::move(p));
  }
  if (in.bad()) throw IoError("error reading " + path);
  return pairs;
}

void write_tsv_pairs(const std::string& path, const std::vector<SentencePair>& pairs) {
  for (const SentencePair& p : pairs) {
    for (const std::string* side : {&p.source, &p.target}) {
      if (side->find_first_of("\t\n\r") != std::string::npos) {
        throw ValueError("write_tsv_pairs: pair " + p.key +
                         " holds a tab or a line break; it could not be read back");
      }
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError("cannot write " + tmp);
    for (const SentencePair& p : pairs) out << p.source << '\t' << p.target << '\n';
    out.flush();
    if (!out) throw IoError("error writing " + tmp + " (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError("cannot rename " + tmp + " to " + path + ": " + ec.message());
}

std::vector<SentencePair> read_sword_pairs(const std::string& source_module,
                                           const std::string& target_module,
                                           const std::string& sword_dir, int64_t limit) {
#ifndef MTF_HAVE_SWORD
  (void)source_module;
  (void)target_module;
  (void)sword_dir;
  (void)limit;
  throw IoError(
      "this build has no SWORD reader: install libsword-dev (apt-get install libsword-dev "
      "sword-text-web sword-text-sparv) and build again");
#else
  if (!std::filesystem::is_directory(sword_dir + "/mods.d")) {
    throw IoError("no SWORD modules in " + sword_dir +
                  " (apt-get install sword-text-web sword-text-sparv)");
  }
  sword::SWLog::getSystemLog()->setLogLevel(sword::SWLog::LOG_ERROR);
  sword::SWMgr manager(sword_dir.c_str());
  sword::SWModule* source = manager.getModule(source_module.c_str());
  sword::SWModule* target = manager.getModule(target_module.c_str());
  for (const auto& [name, module] : {std::pair(source_module, source), {target_module, target}}) {
    if (!module) {
      throw IoError("SWORD module " + name + " is not installed in " + sword_dir +
                    " (Debian: sword-text-web has " + kEnglishWebModule +
                    ", sword-text-sparv has " + kSpanishRv1909Module + ")");
    }
  }
  std::unordered_map<std::string, std::string> target_text;
  for (target->setPosition(sword::TOP); !target->popError(); (*target)++) {
    std::string t = osis_to_plain_text(target->getRawEntry());
    if (!t.empty()) target_text.emplace(target->getKeyText(), std::move(t));
  }
  std::vector<SentencePair> pairs;
  for (source->setPosition(sword::TOP); !source->popError(); (*source)++) {
    if (limit >= 0 && static_cast<int64_t>(pairs.size()) >= limit) break;
    const std::string key = source->getKeyText();
    auto it = target_text.find(key);
    if (it == target_text.end()) continue;
    std::string s = osis_to_plain_text(source->getRawEntry());
    if (s.empty()) continue;
    pairs.push_back({key, std::move(s), it->second});
  }
  return pairs;
#endif
}

CorpusSplit split_corpus(const std::vector<SentencePair>& pairs, int dev_per_mille,
                         int test_per_mille) {
  if (dev_per_mille < 0 || test_per_mille < 0 || dev_per_mille + test_per_mille > 1000) {
    throw ValueError("split_corpus: dev and test shares (" + std::to_string(dev_per_mille) +
                     " and " + std::to_string(test_per_mille) +
                     " per thousand) must be >= 0 and sum to at most 1000");
  }
  CorpusSplit split;
  for (const SentencePair& p : pairs) {
    uint64_t h = kFnv1aOffset;  // FNV-1a over the source, spaces normalized
    bool space = false, any = false;
    for (char c : p.source) {
      const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      if (ws) {
        space = any;
        continue;
      }
      if (space) h = fnv1a_byte(h, ' ');
      space = false;
      any = true;
      h = fnv1a_byte(h, c);
    }
    const int bucket = static_cast<int>(h % 1000);
    if (bucket < test_per_mille) {
      split.test.push_back(p);
    } else if (bucket < test_per_mille + dev_per_mille) {
      split.dev.push_back(p);
    } else {
      split.train.push_back(p);
    }
  }
  return split;
}

}  // namespace mtf::models
