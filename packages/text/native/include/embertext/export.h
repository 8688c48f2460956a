#pragma once
// EMBERTEXT_API marks the library's public symbols; everything else is hidden.
#if defined(_WIN32)
#if defined(EMBERTEXT_BUILDING_LIBRARY)
#define EMBERTEXT_API __declspec(dllexport)
#else
#define EMBERTEXT_API __declspec(dllimport)
#endif
#else
#define EMBERTEXT_API __attribute__((visibility("default")))
#endif
