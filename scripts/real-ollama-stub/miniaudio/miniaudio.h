/*
 * Stub of miniaudio for building Ollama from its Go module zip, which omits llama.cpp's vendored
 * headers. llama/llama.cpp/tools/mtmd/mtmd-helper.cpp decodes audio input with miniaudio; toolrouter
 * never sends audio, so every decoder call here fails and mtmd reports the input as unreadable.
 * It declares exactly the symbols mtmd-helper.cpp uses (with MA_NO_ENCODING defined, as it is
 * unless MTMD_AUDIO_DEBUG is set). Written for toolrouter's scripts/real-ollama; not miniaudio.
 */
#ifndef TOOLROUTER_MINIAUDIO_STUB_H
#define TOOLROUTER_MINIAUDIO_STUB_H

#include <stddef.h>
#include <stdint.h>

#ifndef MA_API
#define MA_API static
#endif

typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;

#define MA_SUCCESS 0
#define MA_NOT_IMPLEMENTED (-29)

typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;

typedef struct {
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
    int unused;
} ma_decoder;

static inline ma_decoder_config ma_decoder_config_init(ma_format format, ma_uint32 channels, ma_uint32 sampleRate) {
    ma_decoder_config c;
    c.format = format;
    c.channels = channels;
    c.sampleRate = sampleRate;
    return c;
}

static inline ma_result ma_decoder_init_memory(const void *data, size_t size, const ma_decoder_config *config, ma_decoder *decoder) {
    (void)data; (void)size; (void)config;
    if (decoder) decoder->unused = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *decoder, ma_uint64 *length) {
    (void)decoder;
    if (length) *length = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *decoder, void *frames, ma_uint64 count, ma_uint64 *read) {
    (void)decoder; (void)frames; (void)count;
    if (read) *read = 0;
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_uninit(ma_decoder *decoder) {
    (void)decoder;
    return MA_SUCCESS;
}

#endif
