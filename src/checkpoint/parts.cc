#include "checkpoint/parts.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "checkpoint/files.h"
#include "checkpoint/h5.h"
#include "mtf/errors.h"

namespace mtf::checkpoint {

std::string part_name(const std::string& checkpoint_base, int rank, int ranks, uint64_t save_id) {
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(save_id));
  return checkpoint_base + ".part" + std::to_string(rank) + "-of-" + std::to_string(ranks) + "." +
         id;
}

std::string checkpoint_of_part(const std::string& name) {
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || name.size() - dot - 1 != 16) return "";
  for (size_t i = dot + 1; i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return "";
  const size_t part = name.rfind(".part", dot);
  if (part == std::string::npos || part == 0) return "";
  // "<r>-of-<n>" between ".part" and the id.
  const std::string rn = name.substr(part + 5, dot - part - 5);
  const size_t of = rn.find("-of-");
  if (of == std::string::npos || of == 0 || of + 4 >= rn.size()) return "";
  for (size_t i = 0; i < rn.size(); ++i)
    if ((i < of || i >= of + 4) && !std::isdigit(static_cast<unsigned char>(rn[i]))) return "";
  return name.substr(0, part);
}

std::vector<std::string> read_part_names(hid_t file, const std::string& path) {
  if (!h5::has_attribute(file, kPartsAttribute)) return {};
  std::vector<std::string> names = h5::read_strings(file, kPartsAttribute, path);
  // A damaged or crafted list must not lead a reader, or remove_checkpoint,
  // outside the checkpoint's directory or to files that are not parts.
  for (const std::string& n : names) {
    if (n.find('/') != std::string::npos || checkpoint_of_part(n).empty()) {
      throw IoError("\"" + path + "\" lists \"" + n +
                    "\" as a part file, which is not a part file's name; the file is corrupted");
    }
  }
  return names;
}

std::vector<std::string> part_names(const std::string& path) {
  h5::Lock lock;
  h5::Handle file = h5::open_file(path, false);
  return read_part_names(file, path);
}

void check_part_identity(const std::string& path, const std::string& checkpoint) {
  h5::Handle file = h5::open_file(path, false);
  if (!h5::has_attribute(file, kPartNameAttribute)) return;
  const std::string holds = h5::read_string(file, kPartNameAttribute, path);
  if (holds != base_name(path)) {
    throw IoError("part file \"" + path + "\" of checkpoint \"" + checkpoint + "\" holds part \"" +
                  holds +
                  "\": the part files were swapped or renamed; give each its own name "
                  "back (CheckpointInfo::files lists them), or restore an older checkpoint");
  }
}

void remove_checkpoint(const std::string& path) {
  std::vector<std::string> parts;
  try {
    parts = part_names(path);
  } catch (const IoError&) {
    // Not readable: nothing to follow; its parts, if any, become leftovers.
  }
  remove_file(path);
  const std::string dir = directory_of(path);
  for (const std::string& p : parts) remove_file(dir + "/" + p);
}

void remove_leftovers(const std::string& dir) {
  struct Listed {
    bool unreadable = false;  // then every part that names it is kept
    std::set<std::string> parts;
  };
  std::map<std::string, Listed> listed;                    // checkpoint -> its parts
  std::vector<std::pair<std::string, std::string>> parts;  // part, its checkpoint
  for (const std::string& n : list_directory(dir)) {
    if (n.rfind(".tmp-", 0) == 0) {
      remove_file(dir + "/" + n);
      continue;
    }
    const std::string owner = checkpoint_of_part(n);
    if (!owner.empty()) parts.emplace_back(n, owner);
  }
  for (const auto& [part, owner] : parts) {
    auto it = listed.find(owner);
    if (it == listed.end()) {
      Listed l;
      if (file_exists(dir + "/" + owner)) {
        try {
          const std::vector<std::string> v = part_names(dir + "/" + owner);
          l.parts.insert(v.begin(), v.end());
        } catch (const IoError&) {
          l.unreadable = true;
        }
      }
      it = listed.emplace(owner, std::move(l)).first;
    }
    if (!it->second.unreadable && !it->second.parts.count(part)) remove_file(dir + "/" + part);
  }
}

}  // namespace mtf::checkpoint
