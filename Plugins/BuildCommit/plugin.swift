import Foundation
import PackagePlugin

/// Names the commit a build is made from, for `vpnstat --version`: before every build it runs
/// `scripts/build-commit`, which writes `BuildCommit.swift` with the commit from git (a checkout)
/// or from the `.commit` file `git archive` fills in (a tarball without git), else "unknown".
/// The file is rewritten only when the commit changes, so an unchanged tree recompiles nothing.
@main
struct BuildCommit: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
    let root = context.package.directoryURL
    let output = context.pluginWorkDirectoryURL.appending(path: "generated")
    return [
      .prebuildCommand(
        displayName: "Naming the commit vpnstat is built from",
        executable: URL(fileURLWithPath: "/bin/sh"),
        arguments: [root.appending(path: "scripts/build-commit").path, root.path, output.path],
        outputFilesDirectory: output)
    ]
  }
}
