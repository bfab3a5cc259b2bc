// mesh_flags.h — the flags every example shares to choose where it runs: mesh
// shape, layout, mesh implementation, fibers or threads, and (under mtf-launch
// or mpirun) the multi-process transport. Bad values are ValueErrors naming
// the flag.
#pragma once

#include <string>
#include <vector>

#include "cli/flags.h"
#include "mtf/auto_layout.h"
#include "mtf/session.h"

namespace mtf::cli {

// Declares --mesh_shape, --layout, --mesh_impl, --execution, --reproducible,
// --profile, --fuse, --transport.
// `reproducible`: the default of --reproducible (MeshConfig::reproducible).
void define_mesh_flags(Flags& flags, bool reproducible = false);

// The MeshConfig those flags ask for; connects to the other ranks when this
// process is one of a multi-process job (then *transport_name is "TCP" or
// "MPI").
MeshConfig mesh_config_from_flags(const Flags& flags, std::string* transport_name);

// With --layout auto: chooses the layout rules for the training step (its
// runs and, with gradient accumulation, the update run; auto_layout on a
// rough model of this machine, one core per processor; deterministic, so
// every rank of a job chooses the same), prints the ranked candidates and
// sets config.layout. Does nothing otherwise.
void resolve_auto_layout(const Flags& flags, MeshConfig& config, Graph& graph,
                         const TrainingStep& step);

// LayoutError when a rule of config.layout names a tensor dimension that no
// tensor of `graph` has (a misspelling would otherwise leave that dimension
// whole, silently), with the nearest name. The library takes such rules, as
// Mesh TensorFlow does (one rule set may serve several models); a layout
// typed for one model's run here is checked.
void check_layout_dimensions(const MeshConfig& config, const Graph& graph);

// --microbatches: each of the `parts` equal parts of `batch` rows must still
// divide over the mesh dimension the layout splits "batch" on (checked
// before any work; a layout chosen by --layout auto is searched among the
// ones that do). ValueError saying what to change otherwise.
void check_microbatches(int64_t batch, int64_t parts, const MeshConfig& mesh);

// "mesh: rows:2;cols:2 (4 processors), layout: "...", simd" (or "rank r of n
// processes over TCP"), for the examples' first lines.
std::string describe_mesh(const MeshConfig& config, const std::string& transport_name);

}  // namespace mtf::cli
