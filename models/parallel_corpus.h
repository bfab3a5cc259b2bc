// parallel_corpus.h — sentence pairs for translation: a plain TSV reader,
// a verse-aligned reader of two SWORD Bible modules (Debian's
// sword-text-web, English, and sword-text-sparv, Spanish, through
// libsword), and a deterministic train / dev / test split.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtf::models {

struct SentencePair {
  std::string key;  // where it came from: "Genesis 1:1", or "corpus.tsv:12"
  std::string source, target;
};

// One pair a line, "source<TAB>target", UTF-8; a final newline is optional
// and "\r\n" endings are accepted. IoError when the file cannot be read;
// ValueError naming the file and line for an empty line, a line without a
// tab or with more than one, or a side that is empty or only spaces.
std::vector<SentencePair> read_tsv_pairs(const std::string& path);

// Writes pairs in read_tsv_pairs' format (IoError when it cannot).
// ValueError when a side holds a tab or a line break (it could not be read
// back).
void write_tsv_pairs(const std::string& path, const std::vector<SentencePair>& pairs);

// The text of one verse of a SWORD module in OSIS markup, as plain text:
// notes (footnotes, cross-references) and titles dropped with everything in
// them, other elements' tags dropped and their text kept, entities decoded,
// runs of whitespace made one space, ends trimmed. Where a dropped note sat
// between two letters (the World English Bible writes "God<note>..</note>
// created"), a space keeps the words apart — libsword's own plain-text
// filter joins them ("Godcreated"), which is why this does not use it.
std::string osis_to_plain_text(const std::string& osis);

// The verses present, with text, in both modules (source and target), in
// the source module's order, keyed by the verse ("Genesis 1:1"); verses
// missing or empty on either side are skipped. At most `limit` pairs when
// limit >= 0 (tests read a sample). IoError when libsword is not built in,
// or a module is not installed (saying which package to install).
std::vector<SentencePair> read_sword_pairs(const std::string& source_module,
                                           const std::string& target_module,
                                           const std::string& sword_dir = "/usr/share/sword",
                                           int64_t limit = -1);

// Debian's English and Spanish modules.
inline constexpr const char* kEnglishWebModule = "engWEB2015eb";
inline constexpr const char* kSpanishRv1909Module = "spaRV1909eb";

struct CorpusSplit {
  std::vector<SentencePair> train, dev, test;
};

// Each pair goes to dev or test by a hash (FNV-1a, 64 bits) of its source
// sentence with runs of whitespace made one space: about dev_per_mille and
// test_per_mille of every thousand, the rest to train, each in the input's
// order. A sentence that occurs several times (under several keys) lands in
// one split, so no test sentence is ever trained on; the split depends on
// nothing but the text, the same on every machine and run. ValueError when
// the shares are negative or sum above 1000.
CorpusSplit split_corpus(const std::vector<SentencePair>& pairs, int dev_per_mille = 20,
                         int test_per_mille = 20);

}  // namespace mtf::models
