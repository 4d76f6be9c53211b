// The error types live in the public header; every layer includes them through this one.
#pragma once

#include "chorus/error.h"
