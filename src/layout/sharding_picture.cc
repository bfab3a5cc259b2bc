// sharding_picture: a text grid of which processors hold which block of a
// tensor (declared in mtf/layout.h).
#include <algorithm>
#include <map>
#include <set>

#include "core/check.h"
#include "mtf/layout.h"

namespace mtf {
namespace {

using detail::str_cat;

// "p3", "p0-p7" (consecutive), "p0 p4" (a few), "p0,p4..p28 (8)" (a longer
// progression), "p0,p5,..,p31 (9)" (otherwise).
std::string processors_text(const std::vector<int64_t>& ps) {
  if (ps.empty()) return "-";
  if (ps.size() == 1) return str_cat("p", ps[0]);
  bool consecutive = true, progression = true;
  for (size_t i = 1; i < ps.size(); ++i) {
    consecutive = consecutive && ps[i] == ps[i - 1] + 1;
    progression = progression && ps[i] - ps[i - 1] == ps[1] - ps[0];
  }
  if (consecutive) return str_cat("p", ps.front(), "-p", ps.back());
  if (ps.size() <= 3) {
    std::string s;
    for (int64_t p : ps) s += (s.empty() ? "p" : " p") + std::to_string(p);
    return s;
  }
  return str_cat("p", ps[0], ",p", ps[1], progression ? ".." : ",..,", "p", ps.back(), " (",
                 ps.size(), ")");
}

// The blocks of one tensor axis shown: all of them up to `max`, else the
// first max-2, then a gap (-1), then the last.
std::vector<int64_t> shown_blocks(int64_t n, int64_t max) {
  std::vector<int64_t> v;
  if (n <= max) {
    for (int64_t i = 0; i < n; ++i) v.push_back(i);
    return v;
  }
  for (int64_t i = 0; i < max - 2; ++i) v.push_back(i);
  v.push_back(-1);
  v.push_back(n - 1);
  return v;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string sharding_picture(const TensorLayout& layout, int max_blocks) {
  if (max_blocks < 3) max_blocks = 3;
  const Shape& shape = layout.shape();
  const MeshShape& mesh = layout.mesh();
  const Shape slice = layout.slice_shape();
  // The split tensor axes, in tensor order; the first two make the grid.
  std::vector<int> split;
  for (int a = 0; a < shape.ndims(); ++a)
    if (layout.tensor_to_mesh()[a] >= 0) split.push_back(a);
  const int64_t procs = mesh.size();
  int64_t blocks = 1;
  for (int a : split) blocks *= shape[a].size / slice[a].size;
  std::string out = str_cat(
      layout.to_string(), " on ", mesh.ndims() ? mesh.to_string() : std::string("one processor"),
      ": ", blocks, blocks == 1 ? " block" : " blocks", " of ", slice.to_string(), ", each on ",
      procs / blocks, procs / blocks == 1 ? " processor\n" : " processors\n");
  if (split.empty()) {
    return out + str_cat("  every processor holds the whole tensor (",
                         procs > 1 ? str_cat("p0-p", procs - 1) : std::string("p0"), ")\n");
  }
  // The processors holding each (row block, column block) of the grid;
  // further split axes are folded into the cells.
  const int row_axis = split[0];
  const int col_axis = split.size() > 1 ? split[1] : -1;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> holders;
  for (int64_t p = 0; p < procs; ++p) {
    const std::vector<int64_t> begin = layout.slice_begin(p);
    const int64_t r = begin[row_axis] / slice[row_axis].size;
    const int64_t c = col_axis >= 0 ? begin[col_axis] / slice[col_axis].size : 0;
    holders[{r, c}].push_back(p);
  }
  auto range = [&](int axis, int64_t block) {
    if (block < 0) return std::string("...");
    const int64_t s = slice[axis].size;
    return str_cat(block * s, ":", (block + 1) * s);
  };
  const std::vector<int64_t> rows =
      shown_blocks(shape[row_axis].size / slice[row_axis].size, max_blocks);
  const std::vector<int64_t> cols =
      col_axis >= 0 ? shown_blocks(shape[col_axis].size / slice[col_axis].size, max_blocks)
                    : std::vector<int64_t>{0};
  // Cells as text, then column widths.
  std::vector<std::vector<std::string>> cells(rows.size() + 1,
                                              std::vector<std::string>(cols.size() + 1));
  cells[0][0] = shape[row_axis].name + (col_axis >= 0 ? " \\ " + shape[col_axis].name : "");
  for (size_t j = 0; j < cols.size(); ++j)
    cells[0][j + 1] = col_axis >= 0 ? range(col_axis, cols[j]) : "all of the rest";
  for (size_t i = 0; i < rows.size(); ++i) {
    cells[i + 1][0] = range(row_axis, rows[i]);
    for (size_t j = 0; j < cols.size(); ++j) {
      if (rows[i] < 0 || cols[j] < 0) {
        cells[i + 1][j + 1] = "...";
        continue;
      }
      std::vector<int64_t> ps = holders[{rows[i], cols[j]}];
      std::sort(ps.begin(), ps.end());
      cells[i + 1][j + 1] = processors_text(ps);
    }
  }
  std::vector<size_t> width(cols.size() + 1, 0);
  for (const auto& row : cells)
    for (size_t j = 0; j < row.size(); ++j) width[j] = std::max(width[j], row[j].size());
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string line = "  " + pad(cells[i][0], width[0]);
    for (size_t j = 1; j < cells[i].size(); ++j) line += " | " + pad(cells[i][j], width[j]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (split.size() > 2) {
    std::string rest;
    for (size_t k = 2; k < split.size(); ++k)
      rest += (rest.empty() ? "" : ", ") + shape[split[k]].name;
    out += "  (each cell: the processors of every block of " + rest + " in it)\n";
  }
  return out;
}

}  // namespace mtf
