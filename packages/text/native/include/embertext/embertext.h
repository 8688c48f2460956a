#pragma once
// The embertext tokenizer library: include this one header.
#include "embertext/bert.h"
#include "embertext/bpe.h"
#include "embertext/error.h"
#include "embertext/tokenizer.h"
#include "embertext/version.h"
