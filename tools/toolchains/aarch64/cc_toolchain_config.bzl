"""A cc_toolchain_config for Debian's aarch64-linux-gnu cross compiler."""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)

_COMPILE_ACTIONS = [
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
]

_LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def _impl(ctx):
    tools = ["ar", "cpp", "gcc", "gcov", "ld", "nm", "objdump", "strip"]
    tool_paths = [tool_path(name = t, path = "/usr/bin/aarch64-linux-gnu-" + t) for t in tools]
    tool_paths.append(tool_path(name = "compat-ld", path = "/usr/bin/aarch64-linux-gnu-ld"))
    tool_paths.append(tool_path(name = "dwp", path = "/usr/bin/aarch64-linux-gnu-dwp"))
    tool_paths.append(tool_path(name = "objcopy", path = "/usr/bin/aarch64-linux-gnu-objcopy"))

    features = [
        feature(
            name = "default_compile_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = _COMPILE_ACTIONS,
                flag_groups = [flag_group(flags = ["-fPIC", "-no-canonical-prefixes"])],
            )],
        ),
        feature(
            name = "default_link_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = _LINK_ACTIONS,
                flag_groups = [flag_group(flags = ["-lstdc++", "-lm", "-pthread"])],
            )],
        ),
        feature(name = "supports_pic", enabled = True),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        cxx_builtin_include_directories = [
            "/usr/aarch64-linux-gnu/include",
            "/usr/lib/gcc-cross/aarch64-linux-gnu",
            "/usr/include",
        ],
        toolchain_identifier = "aarch64-linux-gnu",
        host_system_name = "x86_64-linux-gnu",
        target_system_name = "aarch64-linux-gnu",
        target_cpu = "aarch64",
        target_libc = "glibc",
        compiler = "gcc",
        abi_version = "gcc",
        abi_libc_version = "glibc",
        tool_paths = tool_paths,
    )

cc_toolchain_config = rule(implementation = _impl, attrs = {}, provides = [CcToolchainConfigInfo])
