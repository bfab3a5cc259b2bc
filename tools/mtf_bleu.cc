// mtf-bleu: corpus BLEU of a file of translations against a file of
// references, one sentence a line, tokenized with 13a (models/bleu.h).
//
//   mtf-bleu --hypotheses out.txt --references ref.txt
//   BLEU = 23.41 (56.2/29.8/17.1/10.0, BP 0.973, 1203/1236 tokens)
//
// --tokens true also prints each line's tokens (hypothesis, a tab, its
// reference; tokens joined by single spaces) and the score as a fraction to
// 17 digits before the usual line: what the test comparing with NLTK reads.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/flags.h"
#include "models/bleu.h"
#include "mtf/errors.h"

namespace {

std::vector<std::string> read_lines(const std::string& path, const char* flag) {
  if (path.empty()) throw mtf::ValueError(std::string("give --") + flag + " FILE");
  std::ifstream in(path);
  if (!in) throw mtf::IoError(std::string("--") + flag + ": cannot open " + path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    mtf::cli::Flags flags;
    flags.define("hypotheses", "", "file of translations, one sentence a line");
    flags.define("references", "", "file of reference translations, line for line");
    flags.define("tokens", "false", "also print each line's 13a tokens");
    if (!flags.parse(argc, argv)) return 0;
    const std::vector<std::string> hyps = read_lines(flags.str("hypotheses"), "hypotheses");
    const std::vector<std::string> refs = read_lines(flags.str("references"), "references");
    if (hyps.size() != refs.size()) {
      throw mtf::ValueError(flags.str("hypotheses") + " has " + std::to_string(hyps.size()) +
                            " lines but " + flags.str("references") + " has " +
                            std::to_string(refs.size()) + "; give one reference a line");
    }
    if (flags.boolean("tokens")) {
      for (size_t i = 0; i < hyps.size(); ++i)
        std::printf("%s\t%s\n", joined(mtf::models::tokenize_13a(hyps[i])).c_str(),
                    joined(mtf::models::tokenize_13a(refs[i])).c_str());
    }
    const mtf::models::BleuScore score = mtf::models::corpus_bleu_13a(hyps, refs);
    if (flags.boolean("tokens")) std::printf("bleu_fraction %.17g\n", score.bleu / 100);
    std::printf("%s\n", score.to_string().c_str());
    return 0;
  } catch (const mtf::Error& e) {
    std::fprintf(stderr, "mtf-bleu: %s\n", e.what());
    return 1;
  }
}
