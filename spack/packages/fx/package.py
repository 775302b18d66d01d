# fx's Spack package (docs/install.md, section 3). Checked offline by
# scripts/spack_check.sh, which installs it from this checkout.
import os

from spack.package import *

# This file lives in <checkout>/spack/packages/fx/: the checkout is the git
# repository `fx@main` (and `fx@git.<commit>=main`) is fetched from.
_checkout = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class Fx(CMakePackage, CudaPackage, ROCmPackage):
    """Online recovery from process and node failures for MPI + Kokkos
    applications: ULFM shrink, spare ranks promoted in place, in-memory
    (buddy, parity), node-local and HDF5 checkpoints."""

    git = "file://" + _checkout

    version("main", branch="main")

    variant("openmp", default=False, description="Use Kokkos' OpenMP backend (kokkos+openmp)")
    variant("hdf5", default=True, description="Build the HDF5 checkpoint level (a plugin)")
    variant("shared", default=False, description="Build shared libraries (static by default, as fx's CMake)")
    variant(
        "pmix",
        default=True,
        description="Build against PMIx's headers: a process's non-zero _exit() inside the job ends it",
    )

    depends_on("cmake@3.20:", type="build")

    # ULFM (MPIX_Comm_revoke/shrink/agree, MPIX_ERR_PROC_FAILED): Open MPI 5
    # has it built in. fx's CMake checks the symbols again and stops with
    # the same message for an Open MPI built without it (--with-ft=no).
    depends_on("mpi")
    requires(
        "^openmpi@5:",
        msg="fx needs an MPI with ULFM fault tolerance: Open MPI >= 5.0 "
        "(MPICH, MVAPICH, Intel MPI and Open MPI 4 have no usable ULFM)",
    )

    # PMIx's headers only: its types and event codes (the functions are those
    # of the PMIx Open MPI loaded). ULFM does not report a process's
    # non-zero exit; fx hears it through PMIx. The same pmix as Open MPI's
    # where Spack built Open MPI (~internal-pmix).
    depends_on("pmix@4:", type="build", when="+pmix")

    depends_on("kokkos@3.4:")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos+cuda+cuda_lambda+wrapper", when="+cuda")
    depends_on("kokkos+rocm", when="+rocm")
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    for _target in ROCmPackage.amdgpu_targets:
        depends_on(f"kokkos amdgpu_target={_target}", when=f"+rocm amdgpu_target={_target}")
    conflicts("+cuda", when="+rocm", msg="one GPU backend at a time (Kokkos builds one)")

    # Serial HDF5: one file per rank, no parallel I/O.
    depends_on("hdf5~mpi", when="+hdf5")
    depends_on("yaml-cpp@0.6:")
    depends_on("spdlog@1.9:")
    depends_on("fmt@8:")
    depends_on("cli11@2:")
    depends_on("xxhash@0.8:")
    depends_on("googletest@1.10:", type="test")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define_from_variant("FX_ENABLE_HDF5", "hdf5"),
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define_from_variant("FX_ENABLE_PMIX", "pmix"),
            self.define("FX_BUILD_TESTS", self.run_tests),
            self.define("FX_BUILD_MINIAPPS", self.run_tests),
            self.define("FX_BUILD_BENCH", False),
        ]
        if spec.satisfies("+pmix"):
            args.append(self.define("FX_PMIX_INCLUDE_DIR", spec["pmix"].prefix.include))
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx))
        if spec.satisfies("+rocm"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["hip"].hipcc))
        return args

    def check(self):
        # The quick label: unit tests and a few kill tests (docs/testing.md).
        with working_dir(self.build_directory):
            ctest("--output-on-failure", "--timeout", "600", "-L", "^(unit|quick)$")
