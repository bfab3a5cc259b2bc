// translate_flags.h — examples/translate's command line and what a
// checkpoint must agree on with it: the flags (defined once), the model
// configuration they give, the metadata a checkpoint records, and the check
// that a checkpoint holds the flags' model and vocabulary (a ValueError
// naming the differing flag otherwise).
#pragma once

#include <map>
#include <string>

#include "cli/flags.h"
#include "models/translation_data.h"

namespace translate_example {

void define_flags(mtf::cli::Flags& flags);

mtf::models::EncDecConfig config_from_flags(const mtf::cli::Flags& flags);

// What a checkpoint must agree on with the flags to be resumed or used.
std::map<std::string, std::string> model_metadata(const mtf::models::EncDecConfig& c,
                                                  const mtf::models::Vocabulary& v);

// The checkpoint's model must be the flags' (and its vocabulary this one).
void check_checkpoint(const mtf::CheckpointInfo& info, const mtf::models::EncDecConfig& c,
                      const mtf::models::Vocabulary& v);

}  // namespace translate_example
