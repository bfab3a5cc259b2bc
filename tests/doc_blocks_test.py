#!/usr/bin/env python3
"""tests/doc_blocks.py on small docs of its own: a command block runs, its
output block is compared (exact, with a tolerance, masked, elided), a figure
that moves fails, --write puts the new figure in, and a doc whose blocks are
not all marked is refused."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_blocks  # noqa: E402

FENCE = "```"


def doc(*parts):
    return "\n".join(parts) + "\n"


def run_block(commands, directive="run"):
    return doc(f"<!-- doc: {directive} -->", FENCE + "sh", *commands, FENCE)


def output_block(lines, directive="output"):
    return doc(f"<!-- doc: {directive} -->", FENCE, *lines, FENCE)


class DocBlocksTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="doc-blocks-test-")
        self.source = os.path.join(self.dir, "src")
        self.build = os.path.join(self.dir, "build")
        os.makedirs(os.path.join(self.source, "examples"))
        os.makedirs(self.build)
        with open(os.path.join(self.source, "examples", "count.sh"), "w") as f:
            f.write('echo "args $*"\n')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def check(self, text, write=False):
        path = os.path.join(self.source, "doc.md")
        with open(path, "w") as f:
            f.write(text)
        problems, ran, skipped, outputs = doc_blocks.check_doc(path, self.source, self.build,
                                                               write, {})
        with open(path) as f:
            return problems, ran, skipped, outputs, f.read()

    def test_shown_output_matches(self):
        text = run_block(["echo 'step time 86.897 us'; echo other; echo 'peak 300.50 KiB'"]) + \
            output_block(["step time 86.897 us", "...", "peak 300.50 KiB"])
        problems, ran, _, outputs, _ = self.check(text)
        self.assertEqual(problems, [])
        self.assertEqual((ran, outputs), (1, 1))

    def test_a_moved_figure_fails_and_write_updates_it(self):
        text = run_block(["echo 'step time 86.899 us'"]) + output_block(["step time 86.897 us"])
        problems, _, _, _, _ = self.check(text)
        self.assertEqual(len(problems), 1)
        self.assertIn("a figure moved", problems[0])
        self.assertIn("86.899", problems[0])
        _, _, _, _, written = self.check(text, write=True)
        self.assertIn("step time 86.899 us", written)
        self.assertNotIn("86.897", written)
        self.assertEqual(self.check(written)[0], [])

    def test_tolerance_and_masks(self):
        text = run_block(["echo 'searched 209 layouts in 1.54 s; 321.9 ms'"]) + \
            output_block(["searched 209 layouts in 24.15 s; 321.6 ms"],
                         "output tolerance=0.5 mask='in [0-9.]+ s'")
        self.assertEqual(self.check(text)[0], [])
        tight = text.replace("tolerance=0.5", "tolerance=0.01")
        self.assertEqual(len(self.check(tight)[0]), 1)

    def test_elided_text_within_a_line(self):
        text = run_block(["echo 'collectives per op (long words here):'"]) + \
            output_block(["collectives per op (...):"])
        self.assertEqual(self.check(text)[0], [])

    def test_a_missing_line_fails(self):
        text = run_block(["echo one"]) + output_block(["two"])
        problems = self.check(text)[0]
        self.assertEqual(len(problems), 1)
        self.assertIn("not printed", problems[0])

    def test_a_failing_command_fails(self):
        problems = self.check(run_block(["false"]))[0]
        self.assertEqual(len(problems), 1)
        self.assertIn("exit status 1", problems[0])

    def test_shorten_adds_flags_to_examples_only(self):
        text = run_block(["bash examples/count.sh --steps 3000  # a long run", "echo done"],
                         "run shorten='--steps 2'") + \
            output_block(["args --steps 3000 --steps 2", "done"])
        self.assertEqual(self.check(text)[0], [])

    def test_tmp_and_home_stay_in_the_scratch_directory(self):
        text = run_block(['echo x > /tmp/doc-blocks-probe && test -f "$TMPDIR/doc-blocks-probe"',
                          'case "$HOME" in */mtf-docs-*) ;; *) exit 3;; esac'])
        self.assertEqual(self.check(text)[0], [])
        self.assertFalse(os.path.exists("/tmp/doc-blocks-probe"))

    def test_needs_skips_with_a_line(self):
        problems, ran, skipped, _, _ = self.check(
            run_block(["no-such-program-x"], "run needs=no-such-program-x"))
        self.assertEqual((problems, ran, skipped), ([], 0, 1))

    def test_a_table_is_checked_against_its_rows_commands(self):
        with open(os.path.join(self.source, "examples", "sim.sh"), "w") as f:
            f.write('echo "header line"; echo "{\\"step_time\\": $1, \\"messages\\": 1200}"\n')
        table = doc("<!-- doc: table tolerance=0.5 cell='2={step_time*1e3:.1f} ms' "
                    "cell='3={messages:,}' -->",
                    "| case | step | messages |", "| --- | --- | --- |",
                    "| a | 12.5 ms | 1,200 |", "| b | 40.0 ms | 1,200 |", "",
                    "<!-- doc: rows -->", FENCE + "sh", "X=0.0125",
                    'bash examples/sim.sh "$X"', "bash examples/sim.sh 0.0401  # a comment",
                    FENCE)
        problems, _, _, outputs, _ = self.check(table)
        self.assertEqual((problems, outputs), ([], 1))
        moved = table.replace("| 40.0 ms |", "| 42.0 ms |")
        problems = self.check(moved)[0]
        self.assertEqual(len(problems), 1)
        self.assertIn("column 2 shows '42.0 ms'; the command prints '40.1 ms'", problems[0])
        written = self.check(moved, write=True)[4]
        self.assertIn("| b | 40.1 ms | 1,200 |", written)
        with self.assertRaisesRegex(doc_blocks.DocError, "no table above it"):
            self.check(doc("<!-- doc: rows -->", FENCE + "sh", "echo", FENCE))

    def test_unmarked_and_unexplained_blocks_are_refused(self):
        with self.assertRaisesRegex(doc_blocks.DocError, "without a directive"):
            self.check(doc(FENCE + "sh", "echo hi", FENCE))
        with self.assertRaisesRegex(doc_blocks.DocError, "needs the reason"):
            self.check(doc("<!-- doc: skip -->", FENCE + "sh", "echo hi", FENCE))
        with self.assertRaisesRegex(doc_blocks.DocError, "unknown option"):
            self.check(run_block(["echo hi"], "run steps=3"))


if __name__ == "__main__":
    unittest.main()
