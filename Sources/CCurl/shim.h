// libcurl for the Janus API's HTTP requests. curl_easy_setopt, curl_easy_getinfo and
// curl_multi_setopt are variadic, which Swift cannot call: these take one argument type each.
#ifndef MEDIAPIPELINE_CCURL_SHIM_H
#define MEDIAPIPELINE_CCURL_SHIM_H

#include <curl/curl.h>

typedef size_t (*mp_curl_write_function)(char *data, size_t size, size_t count, void *context);

static inline CURLcode mp_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mp_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mp_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mp_curl_set_write_function(CURL *handle, mp_curl_write_function function) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, function);
}

static inline CURLcode mp_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

static inline CURLMcode mp_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// The easy handle and result of a finished transfer (CURLMsg's union, read in C).
static inline CURL *mp_curl_message_done(CURLMsg *message, CURLcode *result) {
    if (message->msg != CURLMSG_DONE) return NULL;
    *result = message->data.result;
    return message->easy_handle;
}

#endif
