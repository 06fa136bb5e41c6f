{
  "targets": [
    {
      "target_name": "cni_chainer",
      "sources": ["native/addon.cc", "native/digest.cc", "native/entry_read.cc", "native/entry_replace.cc", "native/errors.cc", "native/exit_now.cc", "native/fs_at.cc", "native/inotify_watcher.cc", "native/malloc_trim.cc", "native/memory_pressure.cc", "native/owner_lock.cc", "native/random.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++20", "-Wall", "-Wextra"]
    }
  ]
}
