// sharding_picture: which processors hold which block, as a text grid.
#include <gtest/gtest.h>

#include "mtf/layout.h"

namespace mtf {
namespace {

std::string picture(const std::string& shape, const std::string& mesh, const std::string& rules,
                    int max_blocks = 8) {
  return sharding_picture(TensorLayout::make(Shape(shape), LayoutRules(rules), MeshShape(mesh)),
                          max_blocks);
}

TEST(ShardingPicture, TwoSplitAxesMakeAGrid) {
  EXPECT_EQ(picture("batch:8;hidden:16", "rows:2;cols:4", "batch:rows;hidden:cols"),
            "[batch:8@rows, hidden:16@cols] on rows:2;cols:4: 8 blocks of [batch:4, hidden:4], "
            "each on 1 processor\n"
            "  batch \\ hidden | 0:4 | 4:8 | 8:12 | 12:16\n"
            "  0:4            | p0  | p1  | p2   | p3\n"
            "  4:8            | p4  | p5  | p6   | p7\n");
}

TEST(ShardingPicture, ReplicasShareACell) {
  // hidden split over cols, replicated over rows: p1 and p5 hold one block.
  EXPECT_EQ(picture("hidden:16;d:3", "rows:2;cols:4", "hidden:cols"),
            "[hidden:16@cols, d:3] on rows:2;cols:4: 4 blocks of [hidden:4, d:3], each on 2 "
            "processors\n"
            "  hidden | all of the rest\n"
            "  0:4    | p0 p4\n"
            "  4:8    | p1 p5\n"
            "  8:12   | p2 p6\n"
            "  12:16  | p3 p7\n");
  // Replicated over a long axis: a progression.
  const std::string p = picture("hidden:8", "rows:8;cols:2", "hidden:cols");
  EXPECT_NE(p.find("| p0,p2..p14 (8)"), std::string::npos) << p;
  EXPECT_NE(p.find("| p1,p3..p15 (8)"), std::string::npos) << p;
  EXPECT_EQ(picture("d:5", "all:4", ""),
            "[d:5] on all:4: 1 block of [d:5], each on 4 processors\n"
            "  every processor holds the whole tensor (p0-p3)\n");
}

TEST(ShardingPicture, LongAxesAreElided) {
  const std::string p = picture("batch:64", "all:16", "batch:all", 5);
  EXPECT_NE(p.find("  0:4   | p0\n"), std::string::npos) << p;
  EXPECT_NE(p.find("  8:12  | p2\n  ...   | ...\n  60:64 | p15\n"), std::string::npos) << p;
  EXPECT_EQ(p.find("12:16"), std::string::npos) << p;
}

TEST(ShardingPicture, AThirdSplitAxisFoldsIntoTheCells) {
  const std::string p = picture("a:2;b:2;c:2", "x:2;y:2;z:2", "a:x;b:y;c:z");
  EXPECT_NE(p.find("  0:1   | p0-p1 | p2-p3\n"), std::string::npos) << p;
  EXPECT_NE(p.find("every block of c"), std::string::npos) << p;
}

}  // namespace
}  // namespace mtf
